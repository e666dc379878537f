package lower

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// The kernels of this file are written the way a user writes them (issue 22): a
// block of rows per CTA, a tile load, reductions of the loaded tile, loops over
// column chunks with the row statistics carried, the new math ops, and no dot to
// force a layout. They run in the emulator against float64 references on seeded
// random inputs over odd shapes and warp counts.

// userShape is one case: rows x width f32, blockRows rows per CTA, warps per CTA.
type userShape struct {
	rows, width, blockRows, warps int
}

func (s userShape) String() string {
	return fmt.Sprintf("rows%d_w%d_br%d_warps%d", s.rows, s.width, s.blockRows, s.warps)
}

func (s userShape) ctas() int { return (s.rows + s.blockRows - 1) / s.blockRows }

// rowBlock returns the CTA's row offsets (element offsets of each row's start) and
// the mask of rows that exist.
func rowBlock(b *ir.Builder, s userShape) (offs, ok *ir.Value) {
	r := b.Add(b.Mul(b.ProgramID(0), b.I32(int64(s.blockRows))), b.Iota(s.blockRows))
	ok = b.Cmp(ir.CmpLT, r, b.I32(int64(s.rows)))
	return b.Mul(b.Cast(r, ir.I64), b.I64(int64(s.width))), ok
}

func f32Param(b *ir.Builder, name string, n int) *ir.Value {
	return b.Param(name, ir.PtrTo(ir.F32), 16, int64(4*n))
}

// scaleKernel: y = x * alpha over [rows x width], a grid of (row block, column
// block) CTAs of blockRows x cols.
func scaleKernel(s userShape, cols int) *ir.Builder {
	b := ir.NewBuilder("scale")
	x := f32Param(b, "x", s.rows*s.width)
	y := f32Param(b, "y", s.rows*s.width)
	alpha := b.Param("alpha", ir.ScalarOf(ir.F32), 0, 0)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), (s.width+cols-1)/cols, 1)
	offs, ok := rowBlock(b, s)
	c0 := b.Mul(b.ProgramID(1), b.I32(int64(cols)))
	bound := b.Sub(b.I32(int64(s.width)), c0)
	t := b.Load2(x, offs, b.Cast(c0, ir.I64), cols, ok, bound)
	b.Store2(y, offs, b.Cast(c0, ir.I64), ok, bound, b.Mul(t, alpha))
	return b
}

// softmaxKernel: each row of y is softmax(x's row), whole rows in one tile.
func softmaxKernel(s userShape) *ir.Builder {
	b := ir.NewBuilder("softmax")
	x := f32Param(b, "x", s.rows*s.width)
	y := f32Param(b, "y", s.rows*s.width)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), 1, 1)
	offs, ok := rowBlock(b, s)
	t := b.Load2(x, offs, b.I64(0), s.width, ok, nil)
	m := b.Reduce("max", t, 1)
	e := b.Exp(b.Sub(t, b.Broadcast(m, 1, s.blockRows, s.width)))
	sum := b.Reduce("sum", e, 1)
	b.Store2(y, offs, b.I64(0), ok, nil, b.Div(e, b.Broadcast(sum, 1, s.blockRows, s.width)))
	return b
}

// chunkLoader returns a loader of column chunk c of x's row block: the tile (columns
// past the row's end read as 0), its first column and the columns left in the row.
func chunkLoader(b *ir.Builder, s userShape, x, offs, ok *ir.Value, chunk int) func(c *ir.Value) (t, c0, bound *ir.Value) {
	return func(c *ir.Value) (*ir.Value, *ir.Value, *ir.Value) {
		c0 := b.Mul(c, b.I32(int64(chunk)))
		bound := b.Sub(b.I32(int64(s.width)), c0)
		return b.Load2(x, offs, b.Cast(c0, ir.I64), chunk, ok, bound), c0, bound
	}
}

// softmaxChunked: rows too wide for one tile. A first loop over column chunks
// carries each row's running max and sum (online softmax); a second writes
// exp(x - max) / sum chunk by chunk.
func softmaxChunked(s userShape, chunk int) *ir.Builder {
	b := ir.NewBuilder("softmax_chunked")
	x := f32Param(b, "x", s.rows*s.width)
	y := f32Param(b, "y", s.rows*s.width)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), 1, 1)
	offs, ok := rowBlock(b, s)
	br := s.blockRows
	chunks := b.I32(int64((s.width + chunk - 1) / chunk))
	load := chunkLoader(b, s, x, offs, ok, chunk)
	stats := b.For(b.I32(0), chunks, 1, []*ir.Value{b.ConstFloat(ir.NegInf, ir.TileOf(ir.F32, br)), b.ConstFloat(0, ir.TileOf(ir.F32, br))},
		func(c *ir.Value, st []*ir.Value) []*ir.Value {
			t, _, bound := load(c)
			// Columns past the row's end are out of the softmax.
			in := b.Broadcast(b.Cmp(ir.CmpLT, b.Iota(chunk), bound), 0, br, chunk)
			t = b.Select(in, t, b.F32(ir.NegInf))
			m := b.Max(st[0], b.Reduce("max", t, 1))
			p := b.Exp(b.Sub(t, b.Broadcast(m, 1, br, chunk)))
			l := b.Add(b.Mul(st[1], b.Exp(b.Sub(st[0], m))), b.Reduce("sum", p, 1))
			return []*ir.Value{m, l}
		})
	inv := b.Rcp(stats[1])
	b.For(b.I32(0), chunks, 1, nil, func(c *ir.Value, _ []*ir.Value) []*ir.Value {
		t, c0, bound := load(c)
		p := b.Exp(b.Sub(t, b.Broadcast(stats[0], 1, br, chunk)))
		b.Store2(y, offs, b.Cast(c0, ir.I64), ok, bound, b.Mul(p, b.Broadcast(inv, 1, br, chunk)))
		return nil
	})
	return b
}

// rmsnormKernel: y = x / sqrt(mean(x^2) + eps) * w, whole rows in one tile.
func rmsnormKernel(s userShape, eps float64) *ir.Builder {
	b := ir.NewBuilder("rmsnorm")
	x := f32Param(b, "x", s.rows*s.width)
	w := f32Param(b, "w", s.width)
	y := f32Param(b, "y", s.rows*s.width)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), 1, 1)
	offs, ok := rowBlock(b, s)
	t := b.Load2(x, offs, b.I64(0), s.width, ok, nil)
	ss := b.Reduce("sum", b.Mul(t, t), 1)
	inv := b.Rsqrt(b.Add(b.Mul(ss, b.F32(1/float64(s.width))), b.F32(eps)))
	wt := b.Load1(w, b.Cast(b.Iota(s.width), ir.I64), nil)
	shape := []int{s.blockRows, s.width}
	b.Store2(y, offs, b.I64(0), ok, nil, b.Mul(b.Mul(t, b.Broadcast(inv, 1, shape...)), b.Broadcast(wt, 0, shape...)))
	return b
}

// rmsnormChunked: the sum of squares is carried over column chunks, then a
// second loop scales each chunk.
func rmsnormChunked(s userShape, chunk int, eps float64) *ir.Builder {
	b := ir.NewBuilder("rmsnorm_chunked")
	x := f32Param(b, "x", s.rows*s.width)
	w := f32Param(b, "w", s.width)
	y := f32Param(b, "y", s.rows*s.width)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), 1, 1)
	offs, ok := rowBlock(b, s)
	br := s.blockRows
	chunks := b.I32(int64((s.width + chunk - 1) / chunk))
	load := chunkLoader(b, s, x, offs, ok, chunk)
	ss := b.For(b.I32(0), chunks, 1, []*ir.Value{b.ConstFloat(0, ir.TileOf(ir.F32, br))}, func(c *ir.Value, st []*ir.Value) []*ir.Value {
		t, _, _ := load(c) // columns past the end read as 0
		return []*ir.Value{b.Add(st[0], b.Reduce("sum", b.Mul(t, t), 1))}
	})[0]
	inv := b.Rsqrt(b.Add(b.Mul(ss, b.F32(1/float64(s.width))), b.F32(eps)))
	b.For(b.I32(0), chunks, 1, nil, func(c *ir.Value, _ []*ir.Value) []*ir.Value {
		t, c0, bound := load(c)
		j := b.Add(b.Iota(chunk), c0)
		wt := b.Load1(w, b.Cast(j, ir.I64), b.Cmp(ir.CmpLT, j, b.I32(int64(s.width))))
		shape := []int{br, chunk}
		b.Store2(y, offs, b.Cast(c0, ir.I64), ok, bound, b.Mul(b.Mul(t, b.Broadcast(inv, 1, shape...)), b.Broadcast(wt, 0, shape...)))
		return nil
	})
	return b
}

// columnStats: per column, the mean and the max over the rows, walking the rows
// in a loop that carries a rank-1 sum, a rank-1 max (tiles of the CTA's columns,
// no row vectors of any fragment) and a scalar count. y holds the means, then the
// maxima.
func columnStats(s userShape, cols int) *ir.Builder {
	b := ir.NewBuilder("column_stats")
	x := f32Param(b, "x", s.rows*s.width)
	y := f32Param(b, "y", 2*s.width)
	b.SetWarps(s.warps)
	b.SetGrid((s.width+cols-1)/cols, 1, 1)
	j := b.Add(b.Mul(b.ProgramID(0), b.I32(int64(cols))), b.Iota(cols))
	ok := b.Cmp(ir.CmpLT, j, b.I32(int64(s.width)))
	jl := b.Cast(j, ir.I64)
	inits := []*ir.Value{b.ConstFloat(0, ir.TileOf(ir.F32, cols)), b.ConstFloat(ir.NegInf, ir.TileOf(ir.F32, cols)), b.F32(0)}
	st := b.For(b.I32(0), b.I32(int64(s.rows)), 1, inits, func(r *ir.Value, c []*ir.Value) []*ir.Value {
		v := b.Load1(x, b.Add(b.Mul(b.Cast(r, ir.I64), b.I64(int64(s.width))), jl), ok)
		return []*ir.Value{b.Add(c[0], v), b.Max(c[1], v), b.Add(c[2], b.F32(1))}
	})
	b.Store1(y, jl, ok, b.Div(st[0], st[2]))
	b.Store1(y, b.Add(jl, b.I64(int64(s.width))), ok, st[1])
	return b
}

// userCase compiles a kernel and runs it in the emulator on args, returning the
// output buffer y.
func runUserKernel(t *testing.T, b *ir.Builder, arch string, bufs map[string][]float32, scalars map[string]float32) ([]float32, *ptx.Kernel) {
	t.Helper()
	return runUserKernelBytes(t, b, arch, f32Buffers(bufs), scalars)
}

// f32Buffers are the buffers' bytes, little-endian.
func f32Buffers(bufs map[string][]float32) map[string][]byte {
	raw := map[string][]byte{}
	for name, data := range bufs {
		raw[name] = make([]byte, 4*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint32(raw[name][4*i:], math.Float32bits(v))
		}
	}
	return raw
}

// runUserKernelBytes is runUserKernel with buffers as bytes.
func runUserKernelBytes(t *testing.T, b *ir.Builder, arch string, bufs map[string][]byte, scalars map[string]float32) ([]float32, *ptx.Kernel) {
	t.Helper()
	return runUserKernelOn(t, b, target.MustLookup(arch), bufs, scalars)
}

// runUserKernelOn is runUserKernelBytes on a target value (one with limits of the
// test's own, say).
func runUserKernelOn(t *testing.T, b *ir.Builder, tg target.Target, bufs map[string][]byte, scalars map[string]float32) ([]float32, *ptx.Kernel) {
	t.Helper()
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile(k, tg, Options{Check: true})
	if err != nil {
		t.Fatalf("compile %s: %v", k.Name, err)
	}
	pk := res.Kernel
	mem := emu.NewMemory()
	var args []any
	for _, p := range k.Params {
		name := p.Value.Name
		if p.Value.Type.Kind == ir.Ptr {
			args = append(args, mem.Alloc(name, bufs[name]))
			continue
		}
		args = append(args, scalars[name])
	}
	if err := emu.RunKernel(pk, args, mem); err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	raw := mem.Bytes("y")
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, pk
}

// randomBF16 is n normal values times scale rounded to bf16: their bytes and
// their values.
func randomBF16(rng *rand.Rand, n int, scale float64) ([]byte, []float64) {
	raw, vals := make([]byte, 2*n), make([]float64, n)
	for j := range vals {
		h := dtype.BF16FromF64(rng.NormFloat64() * scale)
		binary.LittleEndian.PutUint16(raw[2*j:], uint16(h))
		vals[j] = h.F64()
	}
	return raw, vals
}

// softmaxRows is attention in float64: for each of rows queries, the scores q·kᵀ
// over n keys of dk (base 2), softmax, times v's n rows of dv columns at vPitch;
// with roundP, P rounded to bf16 before P·V (as a kernel's second dot takes it).
func softmaxRows(qv, kv, vv []float64, rows, n, dk, dv, vPitch int, roundP bool) []float64 {
	want := make([]float64, rows*dv)
	for r := 0; r < rows; r++ {
		s := make([]float64, n)
		m := math.Inf(-1)
		for c := range s {
			for j := 0; j < dk; j++ {
				s[c] += qv[r*dk+j] * kv[c*dk+j]
			}
			m = math.Max(m, s[c])
		}
		var l float64
		for c := range s {
			s[c] = math.Exp2(s[c] - m)
			l += s[c]
		}
		for j := 0; j < dv; j++ {
			var o float64
			for c := range s {
				p := s[c]
				if roundP {
					p = dtype.BF16FromF64(p).F64()
				}
				o += p * vv[c*vPitch+j]
			}
			want[r*dv+j] = o / l
		}
	}
	return want
}

func randomRows(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// compare checks got against the float64 reference within abs + rel*|want|.
func compare(t *testing.T, what string, seed uint64, got []float32, want []float64, abs, rel float64) {
	t.Helper()
	bad := 0
	for i := range want {
		g := float64(got[i])
		if d := math.Abs(g - want[i]); !(d <= abs+rel*math.Abs(want[i])) {
			if bad < 5 {
				t.Errorf("%s (seed %d): element %d = %g, want %g (difference %.3g)", what, seed, i, g, want[i], d)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s (seed %d): %d of %d elements outside %g + %g x |want|", what, seed, bad, len(want), abs, rel)
	}
}

func softmaxRef(x []float32, rows, width int) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < rows; r++ {
		row := x[r*width : (r+1)*width]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		for j, v := range row {
			y[r*width+j] = math.Exp(float64(v)-m) / s
		}
	}
	return y
}

func rmsnormRef(x, w []float32, rows, width int, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < rows; r++ {
		row := x[r*width : (r+1)*width]
		ss := 0.0
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(width)+eps)
		for j, v := range row {
			y[r*width+j] = float64(v) * inv * float64(w[j])
		}
	}
	return y
}

// userShapes are the odd shapes of issue 22: rows 1, 7, 33; widths 8, 100, 1000,
// 4096; 1, 3 (no even split of anything) and 4 warps.
func userShapes(maxWidth int) []userShape {
	var out []userShape
	for _, rows := range []int{1, 7, 33} {
		for _, width := range []int{8, 100, 1000, 4096} {
			if width > maxWidth {
				continue
			}
			for _, warps := range []int{1, 3, 4} {
				out = append(out, userShape{rows: rows, width: width, blockRows: 16, warps: warps})
			}
		}
	}
	return out
}

func TestUserScale(t *testing.T) {
	for i, s := range userShapes(4096) {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(100 + i)
			rng := rand.New(rand.NewPCG(seed, 1))
			x := randomRows(rng, s.rows*s.width, 2)
			alpha := float32(rng.Float64()*4 - 2)
			got, _ := runUserKernel(t, scaleKernel(s, min(s.width, 256)), "sm_90",
				map[string][]float32{"x": x, "y": make([]float32, len(x))}, map[string]float32{"alpha": alpha})
			want := make([]float64, len(x))
			for j, v := range x {
				want[j] = float64(float32(float64(v) * float64(alpha))) // one rounded multiply
			}
			compare(t, "scale", seed, got, want, 0, 0)
		})
	}
}

// softmax tolerances: exp is ex2.approx (2 ulp) of a rounded product (|x|/2 ulp
// for |x| up to about 30 here), summed over up to 4096 terms in f32.
const softmaxRel, softmaxAbs = 2e-5, 1e-9

func TestUserSoftmax(t *testing.T) {
	for i, s := range userShapes(1000) {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(200 + i)
			rng := rand.New(rand.NewPCG(seed, 2))
			x := randomRows(rng, s.rows*s.width, 3)
			got, _ := runUserKernel(t, softmaxKernel(s), "sm_90", map[string][]float32{"x": x, "y": make([]float32, len(x))}, nil)
			compare(t, "softmax", seed, got, softmaxRef(x, s.rows, s.width), softmaxAbs, softmaxRel)
		})
	}
}

// chunkFor varies the column chunk over the cases: wider than the row, dividing
// no width, the whole row (up to 512); not in step with the warp counts.
func chunkFor(i, width int) int { return [...]int{256, 96, min(width, 512)}[(i+i/3)%3] }

func TestUserSoftmaxChunked(t *testing.T) {
	for i, s := range userShapes(4096) {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(300 + i)
			rng := rand.New(rand.NewPCG(seed, 3))
			x := randomRows(rng, s.rows*s.width, 3)
			got, _ := runUserKernel(t, softmaxChunked(s, chunkFor(i, s.width)), "sm_90", map[string][]float32{"x": x, "y": make([]float32, len(x))}, nil)
			compare(t, "softmax (chunked)", seed, got, softmaxRef(x, s.rows, s.width), softmaxAbs, softmaxRel)
		})
	}
}

// rmsnorm tolerance: rsqrt.approx (2^-22.9 relative) and f32 sums of up to 4096
// squares.
const rmsRel, rmsAbs = 1e-5, 1e-6

func TestUserRMSNorm(t *testing.T) {
	const eps = 1e-6
	for i, s := range userShapes(1000) {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(400 + i)
			rng := rand.New(rand.NewPCG(seed, 4))
			x := randomRows(rng, s.rows*s.width, 1)
			w := randomRows(rng, s.width, 1)
			got, _ := runUserKernel(t, rmsnormKernel(s, eps), "sm_90", map[string][]float32{"x": x, "w": w, "y": make([]float32, len(x))}, nil)
			compare(t, "rmsnorm", seed, got, rmsnormRef(x, w, s.rows, s.width, eps), rmsAbs, rmsRel)
		})
	}
}

func TestUserRMSNormChunked(t *testing.T) {
	const eps = 1e-6
	for i, s := range userShapes(4096) {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(500 + i)
			rng := rand.New(rand.NewPCG(seed, 5))
			x := randomRows(rng, s.rows*s.width, 1)
			w := randomRows(rng, s.width, 1)
			got, _ := runUserKernel(t, rmsnormChunked(s, chunkFor(i, s.width), eps), "sm_90", map[string][]float32{"x": x, "w": w, "y": make([]float32, len(x))}, nil)
			compare(t, "rmsnorm (chunked)", seed, got, rmsnormRef(x, w, s.rows, s.width, eps), rmsAbs, rmsRel)
		})
	}
}

func TestUserColumnStats(t *testing.T) {
	for i, s := range userShapes(4096) {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(600 + i)
			rng := rand.New(rand.NewPCG(seed, 6))
			x := randomRows(rng, s.rows*s.width, 1)
			got, _ := runUserKernel(t, columnStats(s, min(s.width, 512)), "sm_90", map[string][]float32{"x": x, "y": make([]float32, 2*s.width)}, nil)
			want := make([]float64, 2*s.width)
			for j := 0; j < s.width; j++ {
				sum, mx := float32(0), float32(math.Inf(-1))
				for r := 0; r < s.rows; r++ {
					v := x[r*s.width+j]
					sum += v // the kernel's order: one f32 add per row
					mx = max(mx, v)
				}
				want[j] = float64(sum / float32(s.rows))
				want[s.width+j] = float64(mx)
			}
			compare(t, "column stats", seed, got, want, 0, 0)
		})
	}
}

// matmulKernel: y[m x n] = a[m x k] · b[k x n] (bf16 in, f32 out), blockRows rows
// of y per CTA, the whole n and k in one dot. With 3 warps, or 4 and n = 100 (13
// n8 tiles), the m16 x n8 grid does not split evenly: legalize pads the columns
// and masks them.
func matmulKernel(s userShape, k int) *ir.Builder {
	b := ir.NewBuilder("matmul")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*s.rows*k))
	bm := b.Param("b", ir.PtrTo(ir.BF16), 16, int64(2*k*s.width))
	y := f32Param(b, "y", s.rows*s.width)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), 1, 1)
	r := b.Add(b.Mul(b.ProgramID(0), b.I32(int64(s.blockRows))), b.Iota(s.blockRows))
	ok := b.Cmp(ir.CmpLT, r, b.I32(int64(s.rows)))
	at := b.Load2(a, b.Mul(b.Cast(r, ir.I64), b.I64(int64(k))), b.I64(0), k, ok, nil)
	bt := b.Load2(bm, b.Mul(b.Cast(b.Iota(k), ir.I64), b.I64(int64(s.width))), b.I64(0), s.width, nil, nil)
	acc := b.Dot(at, bt, b.ConstFloat(0, ir.TileOf(ir.F32, s.blockRows, s.width)))
	b.Store2(y, b.Mul(b.Cast(r, ir.I64), b.I64(int64(s.width))), b.I64(0), ok, nil, acc)
	return b
}

func TestUserMatmulAnyWarps(t *testing.T) {
	const k = 40
	for i, s := range []userShape{{7, 100, 16, 4}, {7, 100, 16, 3}, {33, 24, 32, 3}, {33, 8, 32, 8}, {1, 1000, 16, 3}} {
		t.Run(s.String(), func(t *testing.T) {
			seed := uint64(700 + i)
			rng := rand.New(rand.NewPCG(seed, 7))
			ab, av := randomBF16(rng, s.rows*k, 1)
			bb, bv := randomBF16(rng, k*s.width, 1)
			got, _ := runUserKernelBytes(t, matmulKernel(s, k), "sm_90", map[string][]byte{"a": ab, "b": bb, "y": make([]byte, 4*s.rows*s.width)}, nil)
			want := make([]float64, s.rows*s.width)
			for m := 0; m < s.rows; m++ {
				for n := 0; n < s.width; n++ {
					for j := 0; j < k; j++ {
						want[m*s.width+n] += av[m*k+j] * bv[j*s.width+n]
					}
				}
			}
			compare(t, "matmul", seed, got, want, 1e-5, 1e-6)
		})
	}
}

// TestUserKernelsAssemble: ptxas 11.8 assembles the user kernels for sm_80 and
// sm_90 with no warning, and all but the whole-row softmax and RMSNorm with no
// spill (whole rows of 1000 columns hold 125 values per thread and tile in
// registers at 4 warps: wide rows want the chunked form).
func TestUserKernelsAssemble(t *testing.T) {
	ptxas.Require(t)
	type tc struct {
		name    string
		build   func(userShape) *ir.Builder
		noSpill bool
	}
	cases := []tc{
		{"scale", func(s userShape) *ir.Builder { return scaleKernel(s, min(s.width, 256)) }, true},
		{"softmax", softmaxKernel, false},
		{"softmax_chunked", func(s userShape) *ir.Builder { return softmaxChunked(s, min(s.width, 256)) }, true},
		{"rmsnorm", func(s userShape) *ir.Builder { return rmsnormKernel(s, 1e-6) }, false},
		{"rmsnorm_chunked", func(s userShape) *ir.Builder { return rmsnormChunked(s, min(s.width, 256), 1e-6) }, true},
		{"column_stats", func(s userShape) *ir.Builder { return columnStats(s, min(s.width, 512)) }, true},
		{"matmul", func(s userShape) *ir.Builder { return matmulKernel(s, 40) }, true},
	}
	for _, c := range cases {
		for _, s := range []userShape{{33, 100, 16, 3}, {33, 1000, 16, 4}, {7, 4096, 16, 4}} {
			if (c.name == "softmax" || c.name == "rmsnorm" || c.name == "matmul") && s.width > 1000 {
				continue // whole rows of 4096 do not fit shared memory: the chunked kernels are for them
			}
			for _, arch := range []string{"sm_80", "sm_90"} {
				k, err := c.build(s).Finish()
				if err != nil {
					t.Fatal(err)
				}
				res, err := Compile(k, target.MustLookup(arch), Options{})
				if err != nil {
					t.Fatalf("%s %v %s: %v", c.name, s, arch, err)
				}
				out, err := ptxas.Assemble(res.Kernel.Module.Print(), arch)
				if err != nil {
					t.Errorf("%s %v %s: %v", c.name, s, arch, err)
					continue
				}
				if len(out.Warnings) > 0 {
					t.Errorf("%s %v %s: ptxas warnings %q", c.name, s, arch, out.Warnings)
				}
				spill := out.SpillStores + out.SpillLoads + out.LocalBytes
				t.Logf("%s %v %s: spills %d+%d bytes, local %d", c.name, s, arch, out.SpillStores, out.SpillLoads, out.LocalBytes)
				if c.noSpill && spill > 0 {
					t.Errorf("%s %v %s: spills %d+%d bytes, local memory %d bytes", c.name, s, arch, out.SpillStores, out.SpillLoads, out.LocalBytes)
				}
			}
		}
	}
}

// TestUserWholeRowTooWide: whole rows of 4096 f32 in 16-row blocks do not fit
// shared memory; the error names the tile and the chunked form.
func TestUserWholeRowTooWide(t *testing.T) {
	k, err := softmaxKernel(userShape{33, 4096, 16, 4}).Finish()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(k, target.MustLookup("sm_90"), Options{})
	for _, want := range []string{"262144 bytes", "tile<16x4096xf32>", "column chunks inside a loop"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	}
}

// foldChunks: y[r, j] = sum over c of x[r, c*chunk + j], a rank-2 tile carried
// through the chunk loop (held in fragments), then each column's max over the
// CTA's rows (a reduction along axis 0) into z. y is [rows x chunk], z the
// maxima of each row block, [ctas x chunk].
func foldChunks(s userShape, chunk int) *ir.Builder {
	b := ir.NewBuilder("fold_chunks")
	x := f32Param(b, "x", s.rows*s.width)
	y := f32Param(b, "y", s.rows*chunk+s.ctas()*chunk)
	b.SetWarps(s.warps)
	b.SetGrid(s.ctas(), 1, 1)
	offs, ok := rowBlock(b, s)
	br := s.blockRows
	chunks := (s.width + chunk - 1) / chunk
	acc := b.For(b.I32(0), b.I32(int64(chunks)), 1, []*ir.Value{b.ConstFloat(0, ir.TileOf(ir.F32, br, chunk))}, func(c *ir.Value, st []*ir.Value) []*ir.Value {
		t, _, _ := chunkLoader(b, s, x, offs, ok, chunk)(c)
		return []*ir.Value{b.Add(st[0], t)}
	})[0]
	yrows := b.Mul(b.Cast(b.Add(b.Mul(b.ProgramID(0), b.I32(int64(br))), b.Iota(br)), ir.I64), b.I64(int64(chunk)))
	b.Store2(y, yrows, b.I64(0), ok, nil, acc)
	// Rows past the end hold zeros: out of the max.
	masked := b.Select(b.Broadcast(ok, 1, br, chunk), acc, b.F32(ir.NegInf))
	colMax := b.Reduce("max", masked, 0)
	j := b.Iota(chunk)
	zoff := b.Add(b.Cast(j, ir.I64), b.Cast(b.Add(b.Mul(b.ProgramID(0), b.I32(int64(chunk))), b.I32(int64(s.rows*chunk))), ir.I64))
	b.Store1(y, zoff, nil, colMax)
	return b
}

func TestUserFoldChunks(t *testing.T) {
	for i, s := range []userShape{{7, 100, 16, 3}, {33, 1000, 32, 4}, {33, 4096, 32, 8}, {1, 8, 16, 1}, {40, 300, 48, 3}} {
		chunk := [...]int{24, 96, 256, 8, 100}[i]
		t.Run(fmt.Sprintf("%v_chunk%d", s, chunk), func(t *testing.T) {
			seed := uint64(800 + i)
			rng := rand.New(rand.NewPCG(seed, 8))
			x := randomRows(rng, s.rows*s.width, 1)
			n := s.rows*chunk + s.ctas()*chunk
			got, _ := runUserKernel(t, foldChunks(s, chunk), "sm_90", map[string][]float32{"x": x, "y": make([]float32, n)}, nil)
			want := make([]float64, n)
			sums := make([]float32, s.rows*chunk)
			for r := 0; r < s.rows; r++ {
				for j := 0; j < chunk; j++ {
					for c := j; c < s.width; c += chunk {
						sums[r*chunk+j] += x[r*s.width+c] // the kernel's order
					}
					want[r*chunk+j] = float64(sums[r*chunk+j])
				}
			}
			for cta := 0; cta < s.ctas(); cta++ {
				for j := 0; j < chunk; j++ {
					m := math.Inf(-1)
					for r := cta * s.blockRows; r < min(s.rows, (cta+1)*s.blockRows); r++ {
						m = math.Max(m, float64(sums[r*chunk+j]))
					}
					want[s.rows*chunk+cta*chunk+j] = m
				}
			}
			compare(t, "fold chunks", seed, got, want, 0, 0)
		})
	}
}

// TestUserRandomShapes: the softmax and RMSNorm kernels, whole-row and chunked,
// over seeded random shapes (any rows per CTA, warps 1..8, any chunk): each
// compiles and matches float64.
func TestUserRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(900, 9))
	for i := 0; i < 24; i++ {
		s := userShape{rows: 1 + rng.IntN(40), width: 1 + rng.IntN(300), blockRows: 1 + rng.IntN(40), warps: 1 + rng.IntN(8)}
		chunk := 1 + rng.IntN(300)
		kind := i % 4
		t.Run(fmt.Sprintf("%d_%v_chunk%d", kind, s, chunk), func(t *testing.T) {
			seed := uint64(1000 + i)
			r := rand.New(rand.NewPCG(seed, 10))
			x := randomRows(r, s.rows*s.width, 2)
			w := randomRows(r, s.width, 1)
			bufs := map[string][]float32{"x": x, "w": w, "y": make([]float32, len(x))}
			switch kind {
			case 0:
				got, _ := runUserKernel(t, softmaxKernel(s), "sm_80", bufs, nil)
				compare(t, "softmax", seed, got, softmaxRef(x, s.rows, s.width), softmaxAbs, softmaxRel)
			case 1:
				got, _ := runUserKernel(t, softmaxChunked(s, chunk), "sm_80", bufs, nil)
				compare(t, "softmax (chunked)", seed, got, softmaxRef(x, s.rows, s.width), softmaxAbs, softmaxRel)
			case 2:
				got, _ := runUserKernel(t, rmsnormKernel(s, 1e-6), "sm_80", bufs, nil)
				compare(t, "rmsnorm", seed, got, rmsnormRef(x, w, s.rows, s.width, 1e-6), rmsAbs, rmsRel)
			case 3:
				got, _ := runUserKernel(t, rmsnormChunked(s, chunk, 1e-6), "sm_80", bufs, nil)
				compare(t, "rmsnorm (chunked)", seed, got, rmsnormRef(x, w, s.rows, s.width, 1e-6), rmsAbs, rmsRel)
			}
		})
	}
}

// TestUserCarriedPredicate: an i1 tile carried per thread (does any row of a
// column exceed a threshold?), stored as 0 or 1.
func TestUserCarriedPredicate(t *testing.T) {
	const rows, width, warps = 9, 300, 2
	b := ir.NewBuilder("any_above")
	x := f32Param(b, "x", rows*width)
	y := f32Param(b, "y", width)
	b.SetWarps(warps)
	j := b.Cast(b.Iota(width), ir.I64)
	no := b.Cmp(ir.CmpLT, b.Iota(width), b.I32(0)) // all false
	anyAbove := b.For(b.I32(0), b.I32(rows), 1, []*ir.Value{no}, func(r *ir.Value, c []*ir.Value) []*ir.Value {
		v := b.Load1(x, b.Add(j, b.Mul(b.Cast(r, ir.I64), b.I64(width))), nil)
		return []*ir.Value{b.Or(c[0], b.Cmp(ir.CmpGT, v, b.F32(1.5)))}
	})[0]
	b.Store1(y, j, nil, b.Select(anyAbove, b.F32(1), b.F32(0)))
	rng := rand.New(rand.NewPCG(31, 32))
	xs := randomRows(rng, rows*width, 1)
	got, _ := runUserKernel(t, b, "sm_80", map[string][]float32{"x": xs, "y": make([]float32, width)}, nil)
	want := make([]float64, width)
	ones := 0
	for c := 0; c < width; c++ {
		for r := 0; r < rows; r++ {
			if xs[r*width+c] > 1.5 {
				want[c] = 1
			}
		}
		ones += int(want[c])
	}
	if ones == 0 || ones == width {
		t.Fatalf("seed 31,32: %d of %d columns above: the inputs do not test both outcomes", ones, width)
	}
	compare(t, "any above", 31, got, want, 0, 0)
}
