package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// The lowering features the heads-in-N decode is built from (kernels, -head-block 8):
// a dot whose A operand is a transposed view of a shared tile (ldmatrix .trans), a
// column statistic broadcast back onto the tile it reduces, and a stated grid that
// leaves an n8-wide result unpadded.

// transposedAKernel: y[m x n] = s - colmax(s) with s = aᵀ·b, a stored [k][m] and b
// [k][n] (bf16), one CTA; sched, when set, is the dot's schedule.
func transposedAKernel(m, n, k, warps int, sched *ir.DotSchedule) *ir.Builder {
	b := ir.NewBuilder("trans_a")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*k*m))
	bm := b.Param("b", ir.PtrTo(ir.BF16), 16, int64(2*k*n))
	y := f32Param(b, "y", m*n)
	b.SetWarps(warps)
	b.SetGrid(1, 1, 1)
	rows := b.Cast(b.Iota(k), ir.I64)
	at := b.Load2(a, b.Mul(rows, b.I64(int64(m))), b.I64(0), m, nil, nil)
	bt := b.Load2(bm, b.Mul(rows, b.I64(int64(n))), b.I64(0), n, nil, nil)
	zero := b.ConstFloat(0, ir.TileOf(ir.F32, m, n))
	var s *ir.Value
	if sched != nil {
		s = b.ScheduledDot(b.Trans(at), bt, zero, *sched)
	} else {
		s = b.Dot(b.Trans(at), bt, zero)
	}
	out := b.Sub(s, b.Broadcast(b.Reduce("max", s, 0), 0, m, n))
	b.Store2(y, b.Mul(b.Cast(b.Iota(m), ir.I64), b.I64(int64(n))), b.I64(0), nil, nil, out)
	return b
}

func TestTransposedAColumnView(t *testing.T) {
	replicated := &ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4}
	for i, c := range []struct {
		m, n, k, warps int
		sched          *ir.DotSchedule
	}{
		{32, 8, 64, 4, replicated}, // the decode's scores: every warp the whole tile, a quarter of k
		{64, 8, 32, 4, nil},        // its P·V: rows split over the warps
		{48, 24, 40, 2, nil},
		{16, 16, 16, 1, nil},
	} {
		t.Run(strings.ReplaceAll(ir.TileOf(ir.F32, c.m, c.n, c.k).String(), " ", ""), func(t *testing.T) {
			seed := uint64(900 + i)
			rng := rand.New(rand.NewPCG(seed, 9))
			ab, av := randomBF16(rng, c.k*c.m, 1)
			bb, bv := randomBF16(rng, c.k*c.n, 1)
			got, pk := runUserKernelBytes(t, transposedAKernel(c.m, c.n, c.k, c.warps, c.sched), "sm_90", map[string][]byte{"a": ab, "b": bb, "y": make([]byte, 4*c.m*c.n)}, nil)
			if !strings.Contains(pk.Module.Print(), "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") {
				t.Errorf("A is not read with ldmatrix .x4.trans")
			}
			s := make([]float64, c.m*c.n)
			for r := 0; r < c.m; r++ {
				for col := 0; col < c.n; col++ {
					for j := 0; j < c.k; j++ {
						s[r*c.n+col] += av[j*c.m+r] * bv[j*c.n+col]
					}
				}
			}
			want := make([]float64, len(s))
			for col := 0; col < c.n; col++ {
				mx := math.Inf(-1)
				for r := 0; r < c.m; r++ {
					mx = max(mx, s[r*c.n+col])
				}
				for r := 0; r < c.m; r++ {
					want[r*c.n+col] = s[r*c.n+col] - mx
				}
			}
			compare(t, "aᵀ·b - colmax", seed, got, want, 1e-4, 1e-5)
		})
	}
}

// TestStatedGridLeavesColumnsUnpadded: a [32 x 8] result over 4 warps would be padded
// to 16 columns for a 2x2 grid; stated as one replicated group it keeps its 8.
func TestStatedGridLeavesColumnsUnpadded(t *testing.T) {
	for _, c := range []struct {
		sched *ir.DotSchedule
		cols  string
	}{
		{&ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4}, "32x8xf32"},
		{nil, "32x16xf32"},
	} {
		k, err := transposedAKernel(32, 8, 64, 4, c.sched).Finish()
		if err != nil {
			t.Fatal(err)
		}
		s, err := DumpProgram(&ir.Program{Name: "p", Kernels: []*ir.Kernel{k}}, nil, target.MustLookup("sm_90"), "legalize")
		if err != nil {
			t.Fatal(err)
		}
		var dot string
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "= dot ") {
				dot = line
			}
		}
		if !strings.Contains(dot, "tile<"+c.cols+">") {
			t.Errorf("schedule %v: the dot after legalize is %q, want a tile<%s>", c.sched, strings.TrimSpace(dot), c.cols)
		}
	}
}

// bFromRegistersKernel: y[m x n] = x·bf16(s) with s = a·b [k x n] computed whole by
// every warp (stated `warps 1x1 replicate W`), so the second dot's B comes from s's
// fragments (movmatrix) instead of shared memory.
func bFromRegistersKernel(m, n, k, kk, warps int) *ir.Builder {
	b := ir.NewBuilder("b_regs")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*k*kk))
	bm := b.Param("b", ir.PtrTo(ir.BF16), 16, int64(2*kk*n))
	x := b.Param("x", ir.PtrTo(ir.BF16), 16, int64(2*m*k))
	y := f32Param(b, "y", m*n)
	b.SetWarps(warps)
	b.SetGrid(1, 1, 1)
	rowsOf := func(r, w int) *ir.Value { return b.Mul(b.Cast(b.Iota(r), ir.I64), b.I64(int64(w))) }
	at := b.Load2(a, rowsOf(k, kk), b.I64(0), kk, nil, nil)
	bt := b.Load2(bm, rowsOf(kk, n), b.I64(0), n, nil, nil)
	s := b.ScheduledDot(at, bt, b.ConstFloat(0, ir.TileOf(ir.F32, k, n)), ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: warps})
	xt := b.Load2(x, rowsOf(m, k), b.I64(0), k, nil, nil)
	out := b.ScheduledDot(xt, b.Cast(s, ir.BF16), b.ConstFloat(0, ir.TileOf(ir.F32, m, n)), ir.DotSchedule{Warps: [2]int{warps, 1}})
	b.Store2(y, rowsOf(m, n), b.I64(0), nil, nil, out)
	return b
}

func TestBFromRegisters(t *testing.T) {
	for i, c := range []struct{ m, n, k, kk, warps int }{{64, 8, 32, 64, 4}, {32, 16, 48, 16, 2}, {16, 24, 16, 32, 1}} {
		t.Run(ir.TileOf(ir.F32, c.m, c.n, c.k).String(), func(t *testing.T) {
			seed := uint64(950 + i)
			rng := rand.New(rand.NewPCG(seed, 10))
			ab, av := randomBF16(rng, c.k*c.kk, 1)
			bb, bv := randomBF16(rng, c.kk*c.n, 1)
			xb, xv := randomBF16(rng, c.m*c.k, 1)
			got, pk := runUserKernelBytes(t, bFromRegistersKernel(c.m, c.n, c.k, c.kk, c.warps), "sm_90",
				map[string][]byte{"a": ab, "b": bb, "x": xb, "y": make([]byte, 4*c.m*c.n)}, nil)
			text := pk.Module.Print()
			if !strings.Contains(text, "movmatrix.sync.aligned.m8n8.trans.b16") {
				t.Errorf("B is not formed by movmatrix")
			}
			// a, b and x arrive by cp.async; only staging s would store to shared memory.
			if n := strings.Count(text, "st.shared"); n != 0 {
				t.Errorf("%d st.shared: s went through shared memory", n)
			}
			s := make([]float64, c.k*c.n)
			for r := 0; r < c.k; r++ {
				for col := 0; col < c.n; col++ {
					var acc float32 // the kernel's s is an f32 accumulator, then rounded to bf16
					for j := 0; j < c.kk; j++ {
						acc += float32(av[r*c.kk+j] * bv[j*c.n+col])
					}
					s[r*c.n+col] = dtype.BF16FromF64(float64(acc)).F64()
				}
			}
			want := make([]float64, c.m*c.n)
			for r := 0; r < c.m; r++ {
				for col := 0; col < c.n; col++ {
					for j := 0; j < c.k; j++ {
						want[r*c.n+col] += xv[r*c.k+j] * s[j*c.n+col]
					}
				}
			}
			// s rounds to bf16 where f32 sums in another order may land on the other
			// side of a rounding boundary: one bf16 ulp of |s| (2^-8 relative) per term.
			bound := make([]float64, len(want))
			for r := 0; r < c.m; r++ {
				for col := 0; col < c.n; col++ {
					for j := 0; j < c.k; j++ {
						bound[r*c.n+col] += math.Abs(xv[r*c.k+j]*s[j*c.n+col]) / 256
					}
				}
			}
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > bound[i]+1e-4 {
					t.Fatalf("seed %d: y[%d] = %g, want %g (bound %g)", seed, i, got[i], want[i], bound[i])
				}
			}
		})
	}
}

// computedAKernel: y = [k·q ; kᵀ·p] with k = bf16(e4m3 raw · 2^(e-127)) [m x kd],
// a dequantization both dots state `a computed` for, so k is never stored: the
// first reads each fragment's two raw bytes, the second (kᵀ) takes its fragments
// from the first's by movmatrix where the warps' shares match (first: the
// reduction split over the warps, second: kᵀ's rows over the same warps).
func computedAKernel(m, kd, warps int, first, second ir.DotSchedule) *ir.Builder {
	b := ir.NewBuilder("a_computed")
	raw := b.Param("raw", ir.PtrTo(ir.U8), 16, int64(m*kd))
	sc := b.Param("sc", ir.PtrTo(ir.U8), 16, int64(m*8))
	q := b.Param("q", ir.PtrTo(ir.BF16), 16, int64(2*kd*8))
	p := b.Param("p", ir.PtrTo(ir.BF16), 16, int64(2*m*8))
	y := f32Param(b, "y", (m+kd)*8)
	b.SetWarps(warps)
	b.SetGrid(1, 1, 1)
	rowsOf := func(r, w, off int) *ir.Value { return rowOffsets(b, r, w, off) }
	k := dequantizedTile(b, raw, sc, m, kd)
	qt := b.Load2(q, rowsOf(kd, 8, 0), b.I64(0), 8, nil, nil)
	s1 := b.ScheduledDot(k, qt, b.ConstFloat(0, ir.TileOf(ir.F32, m, 8)), first)
	pt := b.Load2(p, rowsOf(m, 8, 0), b.I64(0), 8, nil, nil)
	s2 := b.ScheduledDot(b.Trans(k), pt, b.ConstFloat(0, ir.TileOf(ir.F32, kd, 8)), second)
	b.Store2(y, rowsOf(m, 8, 0), b.I64(0), nil, nil, s1)
	b.Store2(y, rowsOf(kd, 8, m*8), b.I64(0), nil, nil, s2)
	return b
}

// TestComputedA runs `a computed` dots in the emulator against float64: the
// dequantized tile is exact in bf16, so the only error is the f32 accumulation.
// Where the shares match, each raw pair is loaded once and kᵀ's fragments are
// movmatrix transposes of k's.
func TestComputedA(t *testing.T) {
	computed := ir.HomeComputed
	for i, c := range []struct {
		m, kd, warps  int
		first, second ir.DotSchedule
		reused        bool
	}{
		{32, 64, 4, ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4, AHome: computed}, ir.DotSchedule{Warps: [2]int{4, 1}, AHome: computed}, true},
		{16, 32, 2, ir.DotSchedule{AHome: computed}, ir.DotSchedule{AHome: computed}, false},
		{48, 32, 1, ir.DotSchedule{AHome: computed}, ir.DotSchedule{AHome: computed}, true},
	} {
		t.Run(fmt.Sprintf("%dx%d_w%d", c.m, c.kd, c.warps), func(t *testing.T) {
			seed := uint64(970 + i)
			rng := rand.New(rand.NewPCG(seed, 11))
			raw, sc, k := randomRawTile(rng, c.m, c.kd)
			qb, qv := randomBF16(rng, c.kd*8, 1)
			pb, pv := randomBF16(rng, c.m*8, 1)
			got, pk := runUserKernelBytes(t, computedAKernel(c.m, c.kd, c.warps, c.first, c.second), "sm_90",
				map[string][]byte{"raw": raw, "sc": sc, "q": qb, "p": pb, "y": make([]byte, 4*(c.m+c.kd)*8)}, nil)
			text := pk.Module.Print()
			checkPairs(t, text, c.m*c.kd/2/(32*c.warps), c.reused)
			want, bound := make([]float64, (c.m+c.kd)*8), make([]float64, (c.m+c.kd)*8)
			for r := 0; r < c.m; r++ {
				for j := 0; j < c.kd; j++ {
					for h := 0; h < 8; h++ {
						x, y := k[r*c.kd+j]*qv[j*8+h], k[r*c.kd+j]*pv[r*8+h]
						want[r*8+h] += x
						bound[r*8+h] += math.Abs(x)
						want[(c.m+j)*8+h] += y
						bound[(c.m+j)*8+h] += math.Abs(y)
					}
				}
			}
			checkSums(t, seed, got, want, bound)
		})
	}
}

// TestComputedARefusesFragments: `a computed` on an A that lives in another dot's
// fragments is refused naming the clause.
func TestComputedARefusesFragments(t *testing.T) {
	b := ir.NewBuilder("a_computed_frags")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, 2*32*32)
	y := f32Param(b, "y", 32*32)
	b.SetWarps(2)
	b.SetGrid(1, 1, 1)
	rows := b.Mul(b.Cast(b.Iota(32), ir.I64), b.I64(32))
	at := b.Load2(a, rows, b.I64(0), 32, nil, nil)
	s := b.Dot(at, b.Trans(at), b.ConstFloat(0, ir.TileOf(ir.F32, 32, 32)))
	out := b.ScheduledDot(b.Cast(s, ir.BF16), at, b.ConstFloat(0, ir.TileOf(ir.F32, 32, 32)), ir.DotSchedule{AHome: ir.HomeComputed})
	b.Store2(y, rows, b.I64(0), nil, nil, out)
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(k, target.MustLookup("sm_90"), Options{})
	if err == nil || !strings.Contains(err.Error(), "a computed:") {
		t.Fatalf("compiled, or refused without naming the clause: %v", err)
	}
	t.Log(err)
}

// computedBKernel is computedAKernel with the heads in M: k = the dequantized raw
// tile (m candidates x kd dims), s1 = q·kᵀ (16 x m) and s2 = p·k (16 x kd), both
// reading k as B by the given schedules.
func computedBKernel(m, kd, warps int, first, second ir.DotSchedule) *ir.Builder {
	b := ir.NewBuilder("b_computed")
	raw := b.Param("raw", ir.PtrTo(ir.U8), 16, int64(m*kd))
	sc := b.Param("sc", ir.PtrTo(ir.U8), 16, int64(m*8))
	q := b.Param("q", ir.PtrTo(ir.BF16), 16, int64(2*16*kd))
	p := b.Param("p", ir.PtrTo(ir.BF16), 16, int64(2*16*m))
	y := f32Param(b, "y", 16*(m+kd))
	b.SetWarps(warps)
	b.SetGrid(1, 1, 1)
	rowsOf := func(r, w, off int) *ir.Value { return rowOffsets(b, r, w, off) }
	k := dequantizedTile(b, raw, sc, m, kd)
	qt := b.Load2(q, rowsOf(16, kd, 0), b.I64(0), kd, nil, nil)
	s1 := b.ScheduledDot(qt, b.Trans(k), b.ConstFloat(0, ir.TileOf(ir.F32, 16, m)), first)
	pt := b.Load2(p, rowsOf(16, m, 0), b.I64(0), m, nil, nil)
	s2 := b.ScheduledDot(pt, k, b.ConstFloat(0, ir.TileOf(ir.F32, 16, kd)), second)
	b.Store2(y, rowsOf(16, m, 0), b.I64(0), nil, nil, s1)
	b.Store2(y, rowsOf(16, kd, 16*m), b.I64(0), nil, nil, s2)
	return b
}

// TestComputedB runs `b computed` dots in the emulator against float64, as
// TestComputedA: where the shares match (the scores split along the dims as p·k
// splits its columns), each raw pair is loaded once and k's fragments for p·k are
// movmatrix transposes of the pairs kᵀ's took.
func TestComputedB(t *testing.T) {
	computed := ir.HomeComputed
	for i, c := range []struct {
		m, kd, warps  int
		first, second ir.DotSchedule
		reused        bool
	}{
		{32, 64, 4, ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4, BHome: computed}, ir.DotSchedule{Warps: [2]int{1, 4}, BHome: computed}, true},
		{32, 32, 2, ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 2, BHome: computed}, ir.DotSchedule{Warps: [2]int{1, 2}, BHome: computed}, false},
		{16, 48, 1, ir.DotSchedule{BHome: computed}, ir.DotSchedule{BHome: computed}, true},
	} {
		t.Run(fmt.Sprintf("%dx%d_w%d", c.m, c.kd, c.warps), func(t *testing.T) {
			text := runComputedB(t, uint64(990+i), c.m, c.kd, c.warps, c.first, c.second)
			checkPairs(t, text, c.m*c.kd/2/(32*c.warps), c.reused)
		})
	}
}

// runComputedB runs computedBKernel on seeded random inputs in the emulator, checks
// both dots against float64 (checkSums) and returns the PTX.
func runComputedB(t *testing.T, seed uint64, m, kd, warps int, first, second ir.DotSchedule) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 13))
	raw, sc, k := randomRawTile(rng, m, kd)
	qb, qv := randomBF16(rng, 16*kd, 1)
	pb, pv := randomBF16(rng, 16*m, 1)
	got, pk := runUserKernelBytes(t, computedBKernel(m, kd, warps, first, second), "sm_90",
		map[string][]byte{"raw": raw, "sc": sc, "q": qb, "p": pb, "y": make([]byte, 4*16*(m+kd))}, nil)
	want, bound := make([]float64, 16*(m+kd)), make([]float64, 16*(m+kd))
	for h := 0; h < 16; h++ {
		for r := 0; r < m; r++ {
			for j := 0; j < kd; j++ {
				x, y := qv[h*kd+j]*k[r*kd+j], pv[h*m+r]*k[r*kd+j]
				want[h*m+r] += x
				bound[h*m+r] += math.Abs(x)
				want[16*m+h*kd+j] += y
				bound[16*m+h*kd+j] += math.Abs(y)
			}
		}
	}
	checkSums(t, seed, got, want, bound)
	return pk.Module.Print()
}

// rowOffsets is r row offsets of w elements each from off: off, off+w, ...
func rowOffsets(b *ir.Builder, r, w, off int) *ir.Value {
	return b.Add(b.Mul(b.Cast(b.Iota(r), ir.I64), b.I64(int64(w))), b.I64(int64(off)))
}

// dequantizedTile is the m x kd bf16 tile of the raw e4m3 rows at raw, each scaled
// by 2^(its row's first byte at sc - 127), as the decode dequantizes a record.
func dequantizedTile(b *ir.Builder, raw, sc *ir.Value, m, kd int) *ir.Value {
	rt := b.Load2(b.Bitcast(raw, ir.E4M3), rowOffsets(b, m, kd, 0), b.I64(0), kd, nil, nil)
	st := b.Load2(sc, rowOffsets(b, m, 8, 0), b.I64(0), 8, nil, nil)
	scale := b.Bitcast(b.Shl(b.Cast(b.Column(st, 0), ir.I32), b.I32(23)), ir.F32)
	return b.Cast(b.Mul(b.Cast(rt, ir.F32), b.Broadcast(scale, 1, m, kd)), ir.BF16)
}

// randomRawTile is dequantizedTile's inputs, random (no NaN bytes, scales 2^-7 ..
// 2^7), and the tile they stand for in float64.
func randomRawTile(rng *rand.Rand, m, kd int) (raw, sc []byte, k []float64) {
	raw, sc, k = make([]byte, m*kd), make([]byte, m*8), make([]float64, m*kd)
	for r := 0; r < m; r++ {
		sc[8*r] = byte(120 + rng.IntN(15))
		for j := 0; j < kd; j++ {
			x := byte(rng.IntN(256))
			for x&0x7f == 0x7f { // NaN
				x = byte(rng.IntN(256))
			}
			raw[r*kd+j] = x
			k[r*kd+j] = dtype.E4M3(x).F64() * math.Ldexp(1, int(sc[8*r])-127)
		}
	}
	return raw, sc, k
}

// checkPairs: the tile was not staged, and where the shares match (reused) each
// thread loaded each raw pair once and moved perThread of them by movmatrix (the
// transposed operand's fragments from the other dot's).
func checkPairs(t *testing.T, text string, perThread int, reused bool) {
	t.Helper()
	if strings.Contains(text, "computed by the CTA") {
		t.Errorf("the tile was staged in shared memory")
	}
	if pairs, moves := strings.Count(text, "ld.shared.b16"), strings.Count(text, "movmatrix"); reused && (pairs != perThread || moves != perThread) {
		t.Errorf("%d raw pair loads and %d movmatrix, want %d of each (each pair loaded once, the transposed operand's fragments from the other's)", pairs, moves, perThread)
	}
}

// checkSums: each output within 1e-5 of the sum of its terms' magnitudes.
func checkSums(t *testing.T, seed uint64, got []float32, want, bound []float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > bound[i]*1e-5+1e-30 {
			t.Fatalf("seed %d: y[%d] = %g, want %g (bound %g)", seed, i, got[i], want[i], bound[i]*1e-5)
		}
	}
}
