package emu

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// Shared-memory bank conflicts of ldmatrix: a tile of 32 rows of 64 halfwords (8
// chunks of 16 bytes) is laid out in shared memory in one of several ways, and the
// warp reads every chunk column with ldmatrix, lane 8j+r giving the row of matrix j
// that the case's lane mapping names. The counts are checked against the bank model
// applied to the addresses the test computed, and every loaded register against the
// tile, so counting cannot pass with wrong loads.

// tileLayout places chunk c of logical row r at a byte offset.
type tileLayout struct {
	name  string
	pitch int  // bytes from one row to the next
	xor   bool // chunk c of row r stored at chunk c ^ (r & 7) (needs pitch 128)
	// perMatrix is the wavefronts a matrix of 8 consecutive rows (one chunk column)
	// takes, by the reasoning given with each layout; the test checks it against
	// the bank model on the actual addresses.
	perMatrix int
}

func (t tileLayout) addr(row, chunk int) int {
	if t.xor {
		chunk ^= row & 7
	}
	return row*t.pitch + 16*chunk
}

// bankWavefronts is the wavefronts one matrix takes by the definition of banks:
// 32 banks of 4 bytes, each serving one 4-byte word per wavefront, a word read by
// several lanes served once. So it is the largest number of distinct words that
// the 8 rows (16 bytes each) touch in one bank.
func bankWavefronts(rowAddrs []int) int {
	words := map[int]bool{}
	for _, a := range rowAddrs {
		for w := a / 4; w < a/4+4; w++ {
			words[w] = true
		}
	}
	var perBank [32]int
	most := 0
	for w := range words {
		perBank[w%32]++
		most = max(most, perBank[w%32])
	}
	return most
}

// ldmatrixTileKernel copies the physical tile (sharedBytes, a multiple of 128)
// into shared memory, then for each chunk column c = 0..7 loads lane l's address
// from paddr[32c+l], runs ldmatrix.x<num> and stores register j of lane l at
// pout[32(num c + j) + l] (words).
func ldmatrixTileKernel(num, sharedBytes int) string {
	regs, stores := "{%r20", "\tst.global.u32 [%rd6], %r20;\n"
	for j := 1; j < num; j++ {
		regs += fmt.Sprintf(", %%r%d", 20+j)
		stores += fmt.Sprintf("\tst.global.u32 [%%rd6+%d], %%r%d;\n", 128*j, 20+j)
	}
	regs += "}"
	return kernel(".param .u64 psm, .param .u64 paddr, .param .u64 pout", fmt.Sprintf(`
	ld.param.u64 %%rd0, [psm];
	ld.param.u64 %%rd1, [paddr];
	ld.param.u64 %%rd2, [pout];
	mov.u32 %%r0, %%laneid;
	mov.u32 %%r1, smem;
	mov.u32 %%r2, 0;
COPY:
	mad.lo.u32 %%r3, %%r2, 32, %%r0;
	shl.b32 %%r4, %%r3, 2;
	cvt.u64.u32 %%rd3, %%r4;
	add.u64 %%rd4, %%rd0, %%rd3;
	ld.global.u32 %%r5, [%%rd4];
	add.u32 %%r6, %%r1, %%r4;
	st.shared.u32 [%%r6], %%r5;
	add.u32 %%r2, %%r2, 1;
	setp.lt.u32 %%p0, %%r2, %d;
	@%%p0 bra.uni COPY;
	bar.sync 0;
	mul.wide.u32 %%rd5, %%r0, 4;
	add.u64 %%rd7, %%rd1, %%rd5;          // &paddr[l]
	add.u64 %%rd6, %%rd2, %%rd5;          // &pout[l]
	mov.u32 %%r2, 0;
CHUNK:
	ld.global.u32 %%r7, [%%rd7];
	add.u32 %%r8, %%r1, %%r7;
	ldmatrix.sync.aligned.m8n8.x%d.shared.b16 %s, [%%r8];
%s	add.u64 %%rd7, %%rd7, 128;
	add.u64 %%rd6, %%rd6, %d;
	add.u32 %%r2, %%r2, 1;
	setp.lt.u32 %%p0, %%r2, 8;
	@%%p0 bra.uni CHUNK;`, sharedBytes/128, num, regs, stores, 128*num))
}

func TestLdmatrixBankConflicts(t *testing.T) {
	const seed = 41
	// A 16-byte row at byte a sits in bank group (a/16) % 8, so chunk c of row r
	// at pitch 16p is in group (p r + c) % 8.
	layouts := []tileLayout{
		// p = 9: (r + c) % 8, 8 distinct groups over 8 consecutive rows.
		{name: "pitch 144 (9 chunks, odd)", pitch: 144, perMatrix: 1},
		// p = 8: group c for every row, all 8 rows in one group.
		{name: "pitch 128", pitch: 128, perMatrix: 8},
		// stored at chunk c ^ (r % 8): group c ^ (r % 8), distinct over 8 rows.
		{name: "pitch 128 swizzled", pitch: 128, xor: true, perMatrix: 1},
		// p = 10: (2r + c) % 8, rows r and r+4 share a group.
		{name: "pitch 160 (10 chunks, even)", pitch: 160, perMatrix: 2},
		// p = 12: (4r + c) % 8, rows r, r+2, r+4, r+6 share a group.
		{name: "pitch 192 (12 chunks)", pitch: 192, perMatrix: 4},
	}
	// rowOf maps a lane to the logical row it gives: its own, or (broadcast) the
	// first row of its matrix for all 8 lanes, one address, so one wavefront.
	mappings := []struct {
		name      string
		rowOf     func(lane int) int
		broadcast bool
	}{
		{"row per lane", func(l int) int { return l }, false},
		{"broadcast", func(l int) int { return l &^ 7 }, true},
	}
	r := rand.New(rand.NewPCG(seed, 7))
	tile := make([]uint16, 32*64) // tile[64 row + col]
	for i := range tile {
		tile[i] = uint16(r.Uint32())
	}
	for _, lay := range layouts {
		phys := make([]uint16, 32*lay.pitch/2)
		for i := range phys {
			phys[i] = uint16(r.Uint32()) // padding: read by no one, but written
		}
		for row := 0; row < 32; row++ {
			for col := 0; col < 64; col++ {
				phys[(lay.addr(row, col/8)+2*(col%8))/2] = tile[64*row+col]
			}
		}
		for _, mp := range mappings {
			addrs := make([]uint32, 8*32)
			for c := 0; c < 8; c++ {
				for l := 0; l < 32; l++ {
					addrs[32*c+l] = uint32(lay.addr(mp.rowOf(l), c))
				}
			}
			for _, num := range []int{1, 2, 4} {
				name := fmt.Sprintf("%s/%s/x%d", lay.name, mp.name, num)
				t.Run(name, func(t *testing.T) {
					mem := NewMemory()
					psm := mem.Alloc("smem", u16Bytes(phys))
					pa := mem.Alloc("addr", u32Bytes(addrs))
					po := mem.Alloc("out", make([]byte, 4*32*8*num))
					var sc SharedConflicts
					l := Launch{Block: 32, SharedBytes: 2 * len(phys), Args: []any{psm, pa, po}, Conflicts: &sc}
					if err := run(t, ldmatrixTileKernel(num, 2*len(phys)), l, mem); err != nil {
						t.Fatal(err)
					}
					out := bytesU32(mem.Bytes("out"))
					wantMatrices, wantWavefronts := 0, 0
					for c := 0; c < 8; c++ {
						for j := 0; j < num; j++ {
							rows := make([]int, 8)
							for r := range rows {
								rows[r] = int(addrs[32*c+8*j+r])
							}
							wantMatrices++
							wantWavefronts += bankWavefronts(rows)
							for lane := 0; lane < 32; lane++ {
								// lane holds halfwords 2(lane&3), +1 of matrix row lane>>2.
								row := mp.rowOf(8*j + lane>>2)
								col := 8*c + 2*(lane&3)
								want := uint32(tile[64*row+col]) | uint32(tile[64*row+col+1])<<16
								if got := out[32*(num*c+j)+lane]; got != want {
									t.Errorf("seed %d: chunk %d register %d lane %d = %#x, want %#x", seed, c, j, lane, got, want)
								}
							}
						}
					}
					if got := sc.Matrices.Load(); got != int64(wantMatrices) {
						t.Errorf("Matrices = %d, want %d (8 chunk columns of %d matrices)", got, wantMatrices, num)
					}
					if got := sc.Wavefronts.Load(); got != int64(wantWavefronts) {
						t.Errorf("Wavefronts = %d, want %d by the 32-bank model (%v)", got, wantWavefronts, &sc)
					}
					perMatrix := lay.perMatrix
					if mp.broadcast {
						perMatrix = 1
					}
					if wantWavefronts != perMatrix*wantMatrices {
						t.Errorf("the bank model gives %d wavefronts for %d matrices, the layout's reasoning %d per matrix", wantWavefronts, wantMatrices, perMatrix)
					}
				})
			}
		}
	}
}

// TestSharedConflictsAccumulate: a launch adds every CTA's counts, and launches
// running concurrently on one SharedConflicts all land (go test -race checks the
// counters are safe).
func TestSharedConflictsAccumulate(t *testing.T) {
	lay := tileLayout{pitch: 128} // each chunk column of 8 rows in one bank group
	phys := make([]uint16, 32*lay.pitch/2)
	for i := range phys {
		phys[i] = uint16(i + 1)
	}
	addrs := make([]uint32, 8*32)
	for c := 0; c < 8; c++ {
		for l := 0; l < 32; l++ {
			addrs[32*c+l] = uint32(lay.addr(l, c))
		}
	}
	src := ldmatrixTileKernel(4, 2*len(phys))
	var perLaunch SharedConflicts
	one := func(sc *SharedConflicts, ctas int) error {
		mem := NewMemory()
		psm := mem.Alloc("smem", u16Bytes(phys))
		pa := mem.Alloc("addr", u32Bytes(addrs))
		po := mem.Alloc("out", make([]byte, 4*32*8*4))
		return run(t, src, Launch{Grid: [3]int{ctas, 1, 1}, Block: 32, SharedBytes: 2 * len(phys), Args: []any{psm, pa, po}, Conflicts: sc}, mem)
	}
	if err := one(&perLaunch, 1); err != nil {
		t.Fatal(err)
	}
	m1, w1 := perLaunch.Matrices.Load(), perLaunch.Wavefronts.Load()
	if m1 != 32 || w1 == m1 {
		t.Fatalf("one CTA: %v, want 32 matrices with conflicts (pitch 128 without swizzle)", &perLaunch)
	}
	const launches, ctas = 4, 3
	var sc SharedConflicts
	var wg sync.WaitGroup
	errs := make([]error, launches)
	for i := range launches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = one(&sc, ctas)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m, w := sc.Matrices.Load(), sc.Wavefronts.Load(); m != launches*ctas*m1 || w != launches*ctas*w1 {
		t.Errorf("%d launches of %d CTAs: %v, want %d times one CTA's %d matrices in %d wavefronts", launches, ctas, &sc, launches*ctas, m1, w1)
	}
}
