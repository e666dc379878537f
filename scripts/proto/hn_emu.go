//go:build ignore

// hn_emu runs a heads-in-N prototype kernel (core_gen.py HN=1) in ptxgen's emulator on a
// small paged pool and compares O, the running max, the row sums (and, for DUMPS=1, the last
// tile's scores) with a float64 reference: the prototype's check without a GPU, races and
// uninitialized shared reads included.
//
//	python3 scripts/proto/core_gen.py W=4 NC=32 GATHER=2 S=3 IDXPF=1 HN=1 H=8 > line.txt
//	go run scripts/proto/hn_emu.go -ptx core_<name>.ptx -h 8 -nc 32 -smem <bytes> [-dumps]
//
// With -in DIR the pool, index and q bytes come from DIR/pool.bin, idx.bin and q.bin, and -out
// FILE keeps the kernel's output, so that hn_check.py's reference can be run on the same launch
// (scripts/proto/hn_selftest.py).
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ptx"
)

const (
	page        = 64
	rec         = 584
	pageStride  = page * rec
	tilesPerCTA = 2048 // index tiles each CTA owns in pidx (as time_core.py lays them out)
)

func main() {
	path := flag.String("ptx", "", "kernel file")
	heads := flag.Int("h", 8, "heads (8 or 16)")
	nc := flag.Int("nc", 32, "candidates per tile")
	smem := flag.Int("smem", 0, "dynamic shared bytes (core_gen.py's second field)")
	ntiles := flag.Int("ntiles", 5, "tiles per CTA")
	grid := flag.Int("grid", 2, "CTAs")
	npages := flag.Int("pages", 24, "pool pages")
	dumps := flag.Bool("dumps", false, "the kernel was built with DUMPS=1")
	seed := flag.Int64("seed", 1, "random seed")
	in := flag.String("in", "", "folder with pool.bin, idx.bin and q.bin (instead of random inputs)")
	outPath := flag.String("out", "", "file for the kernel's output")
	flag.Parse()
	if err := run(*path, *heads, *nc, *smem, *ntiles, *grid, *npages, *dumps, *seed, *in, *outPath); err != nil {
		fmt.Fprintln(os.Stderr, "hn_emu:", err)
		os.Exit(1)
	}
}

func run(path string, H, NC, smem, ntiles, grid, npages int, dumps bool, seed int64, in, outPath string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	mod, err := ptx.Parse(string(src))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(seed))
	pool := make([]byte, npages*pageStride)
	for p := 0; p < npages; p++ {
		for r := 0; r < page; r++ {
			b := pool[p*pageStride+r*576:]
			for d := 0; d < 448; d++ {
				x := byte(rng.Intn(256))
				if x&0x7f == 0x7f { // e4m3 NaN
					x--
				}
				b[d] = x
			}
			for i := 0; i < 64; i++ {
				binary.LittleEndian.PutUint16(b[448+2*i:], bf16(rng.NormFloat64()))
			}
			s := pool[p*pageStride+page*576+r*8:]
			for i := 0; i < 8; i++ {
				s[i] = byte(118 + rng.Intn(5))
			}
		}
	}
	idx := make([]byte, grid*tilesPerCTA*NC*4)
	for i := 0; i < len(idx)/4; i++ {
		binary.LittleEndian.PutUint32(idx[4*i:], uint32(rng.Intn(npages*page)))
	}
	q := make([]byte, H*512*2)
	for i := 0; i < H*512; i++ {
		binary.LittleEndian.PutUint16(q[2*i:], bf16(0.2*rng.NormFloat64()))
	}
	if in != "" {
		var files [3][]byte
		for i, n := range []string{"pool.bin", "idx.bin", "q.bin"} {
			if files[i], err = os.ReadFile(in + "/" + n); err != nil {
				return err
			}
		}
		pool, idx, q = files[0], files[1], files[2]
		npages = len(pool) / pageStride
		if len(idx) < grid*tilesPerCTA*NC*4 || len(q) != H*512*2 {
			return fmt.Errorf("%s: idx.bin has %d bytes (want %d or more), q.bin %d (want %d)", in, len(idx), grid*tilesPerCTA*NC*4, len(q), H*512*2)
		}
	}
	blk := H*512 + 2*H
	if dumps {
		blk += NC * H
	}
	mem := emu.NewMemory()
	out := mem.Alloc("out", make([]byte, grid*blk*4))
	args := []any{out, uint32(ntiles), mem.Alloc("pool", pool), uint32(npages * page), mem.Alloc("idx", idx), mem.Alloc("q", q)}
	if err := emu.Run(mod, "core", emu.Launch{Grid: [3]int{grid, 1, 1}, Block: 128, SharedBytes: smem, Args: args}, mem); err != nil {
		return err
	}
	got := mem.Bytes("out")
	if outPath != "" {
		if err := os.WriteFile(outPath, got, 0o644); err != nil {
			return err
		}
	}
	f32 := func(i int) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))) }

	bad := 0
	var maxO, maxLse, maxS float64
	for c := 0; c < grid; c++ {
		n := ntiles * NC
		K := make([][]float64, n)
		for j := 0; j < n; j++ {
			id := int(binary.LittleEndian.Uint32(idx[4*(c*tilesPerCTA*NC+j):]))
			K[j] = loadK(pool, id)
		}
		base := c * blk
		for h := 0; h < H; h++ {
			s := make([]float64, n)
			m := math.Inf(-1)
			for j := range K {
				for d := 0; d < 512; d++ {
					s[j] += bf16val(q[2*(h*512+d):]) * K[j][d]
				}
				m = math.Max(m, s[j])
			}
			var l float64
			o := make([]float64, 512)
			for j := range K {
				p := math.Exp2(s[j] - m)
				l += p
				for d := range o {
					o[d] += p * K[j][d]
				}
			}
			gm, gl := f32(base+H*512+h), f32(base+H*512+H+h)
			lse, glse := (m+math.Log2(l))*math.Ln2, (gm+math.Log2(gl))*math.Ln2
			if e := math.Abs(glse - lse); e > 1e-6+8.0/65536*math.Abs(lse) || math.IsNaN(glse) {
				bad++
				if bad < 10 {
					fmt.Printf("cta %d head %d: lse %g want %g\n", c, h, glse, lse)
				}
			} else {
				maxLse = math.Max(maxLse, e)
			}
			for d := range o {
				want := o[d] / l
				g := f32(base+h*512+d) / gl
				e := math.Abs(g - want)
				if e > 1e-3+2.01/128*math.Abs(want) || math.IsNaN(g) {
					bad++
					if bad < 10 {
						fmt.Printf("cta %d head %d dim %d: O %g want %g\n", c, h, d, g, want)
					}
				}
				maxO = math.Max(maxO, e)
			}
			if dumps {
				for i := 0; i < NC; i++ {
					j := n - NC + i
					g := f32(base + H*512 + 2*H + i*H + h)
					var bound float64
					for d := 0; d < 512; d++ {
						bound += math.Abs(bf16val(q[2*(h*512+d):]) * K[j][d])
					}
					e := math.Abs(g - s[j])
					if e > 1e-5*bound+1e-6 || math.IsNaN(g) {
						bad++
						if bad < 10 {
							fmt.Printf("cta %d head %d candidate %d: S %g want %g\n", c, h, i, g, s[j])
						}
					}
					maxS = math.Max(maxS, e)
				}
			}
		}
	}
	res := "PASS"
	if bad > 0 {
		res = fmt.Sprintf("FAIL (%d values)", bad)
	}
	fmt.Printf("%s: emulator, %d CTAs x %d tiles, H=%d: %s; max |O err| %.2g, |lse err| %.2g, |S err| %.2g\n",
		path, grid, ntiles, H, res, maxO, maxLse, maxS)
	if bad > 0 {
		os.Exit(1)
	}
	return nil
}

// loadK is the spec's loadK (../shared/spec/dsv4-sparse-mla-decode.md section 5) for pages of 64.
func loadK(pool []byte, id int) []float64 {
	p, o := id/page, id%page
	r := pool[p*pageStride+o*576:]
	s := pool[p*pageStride+page*576+o*8:]
	k := make([]float64, 512)
	for d := 0; d < 448; d++ {
		k[d] = e4m3(r[d]) * math.Exp2(float64(s[d/64])-127)
	}
	for i := 0; i < 64; i++ {
		k[448+i] = bf16val(r[448+2*i:])
	}
	return k
}

func e4m3(b byte) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	e, m := int(b>>3)&15, float64(b&7)
	if e == 0 {
		return sign * m / 8 * math.Exp2(-6)
	}
	return sign * (1 + m/8) * math.Exp2(float64(e-7))
}

func bf16(x float64) uint16 {
	f := math.Float32bits(float32(x))
	return uint16((f + 0x7fff + (f>>16)&1) >> 16)
}

func bf16val(b []byte) float64 {
	return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
}
