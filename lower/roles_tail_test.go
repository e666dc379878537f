package lower

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// roleTailCase is a phased loop whose only role op is its last: every warp loads
// the chunks a_j and x_j, a role computes acc = acc + a_j x_j (and with reduce a
// carried row sum of it), and the role stores the carried result after the loop.
// With nested the loop runs inside an outer loop of no role that carries acc too.
// (Issue 29: the role's region stayed open over the loop's back edge, so the other
// warps left the loop at its first iteration, and the store after it panicked in
// coordsOf.)
type roleTailCase struct {
	arch                    string
	warps, first, RoleWarps int
	stages                  int
	nested, reduce          bool
}

func (c roleTailCase) String() string {
	return fmt.Sprintf("%s_w%d_mma%d+%d_s%d_nested%v_reduce%v", c.arch, c.warps, c.first, c.RoleWarps, c.stages, c.nested, c.reduce)
}

// roleTailShape: m x n results, chunks of k, outer x inner iterations.
const roleTailM, roleTailN, roleTailK = 64, 64, 32

func (c roleTailCase) loops() (outer, inner int) {
	if c.nested {
		return 2, 3
	}
	return 1, 3
}

func roleTailKernel(c roleTailCase) *ir.Builder {
	const m, n, k = roleTailM, roleTailN, roleTailK
	outer, inner := c.loops()
	chunks := outer * inner
	b := ir.NewBuilder("role_tail")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*m*k*chunks))
	x := b.Param("x", ir.PtrTo(ir.BF16), 16, int64(2*k*n*chunks))
	yn := m * n
	if c.reduce {
		yn = m
	}
	y := f32Param(b, "y", yn)
	b.SetWarps(c.warps)
	b.DeclareRole("mma", c.first, c.RoleWarps)
	arows := b.Mul(b.Cast(b.Iota(m), ir.I64), b.I64(int64(k*chunks)))
	var acc, sum *ir.Value
	b.OnRole("mma", func() {
		acc = b.ConstFloat(0, ir.TileOf(ir.F32, m, n))
		sum = b.ConstFloat(0, ir.TileOf(ir.F32, m))
	})
	phased := func(o *ir.Value, init []*ir.Value) []*ir.Value {
		return b.ForStages(b.I32(0), b.I32(int64(inner)), 1, c.stages, init, func(j *ir.Value, cr []*ir.Value) []*ir.Value {
			chunk := b.Add(b.Mul(o, b.I32(int64(inner))), j)
			k0 := b.Cast(b.Mul(chunk, b.I32(k)), ir.I64)
			at := b.Load2(a, arows, k0, k, nil, nil)
			xrows := b.Mul(b.Add(b.Cast(b.Iota(k), ir.I64), k0), b.I64(n))
			xt := b.Load2(x, xrows, b.I64(0), n, nil, nil)
			var out []*ir.Value
			b.OnRole("mma", func() {
				next := b.Dot(at, xt, cr[0])
				out = []*ir.Value{next}
				if c.reduce {
					out = append(out, b.Add(cr[1], b.Reduce("sum", next, 1)))
				}
			})
			return out
		})
	}
	init := []*ir.Value{acc}
	if c.reduce {
		init = append(init, sum)
	}
	var res []*ir.Value
	if c.nested {
		res = b.For(b.I32(0), b.I32(int64(outer)), 1, init, func(o *ir.Value, cr []*ir.Value) []*ir.Value {
			return phased(o, cr)
		})
	} else {
		res = phased(b.I32(0), init)
	}
	b.OnRole("mma", func() {
		if c.reduce {
			b.Store1(y, b.Cast(b.Iota(m), ir.I64), nil, res[1])
			return
		}
		b.Store2(y, b.Mul(b.Cast(b.Iota(m), ir.I64), b.I64(n)), b.I64(0), nil, nil, res[0])
	})
	return b
}

// roleTailInputs are a and x with entries in {-1, 0, 1}, so every product and sum is
// exact in f32, and y in float64.
func roleTailInputs(c roleTailCase, seed uint64) (map[string][]byte, []float64) {
	const m, n, k = roleTailM, roleTailN, roleTailK
	outer, inner := c.loops()
	chunks := outer * inner
	rng := rand.New(rand.NewPCG(seed, 29))
	trit := func(cnt int) ([]byte, []float64) {
		raw, vals := make([]byte, 2*cnt), make([]float64, cnt)
		for i := range vals {
			vals[i] = float64(rng.IntN(3) - 1)
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(dtype.BF16FromF64(vals[i])))
		}
		return raw, vals
	}
	ab, av := trit(m * k * chunks)
	xb, xv := trit(k * n * chunks)
	acc := make([]float64, m*n)
	sum := make([]float64, m)
	for j := 0; j < chunks; j++ {
		for r := 0; r < m; r++ {
			for col := 0; col < n; col++ {
				for l := 0; l < k; l++ {
					acc[r*n+col] += av[r*k*chunks+j*k+l] * xv[(j*k+l)*n+col]
				}
				sum[r] += acc[r*n+col]
			}
		}
	}
	want := acc
	if c.reduce {
		want = sum
	}
	return map[string][]byte{"a": ab, "x": xb, "y": make([]byte, 4*len(want))}, want
}

// TestRolesPhasedLoopEndingOnRole: the loops of roleTailCase in the emulator against
// float64, with roles of 1, 3 and 4 warps first, last or between the other warps, 1 to
// 3 stages, nested in a loop of no role and with a reduction on the role.
func TestRolesPhasedLoopEndingOnRole(t *testing.T) {
	for i, c := range []roleTailCase{
		{"sm_90", 6, 0, 4, 1, false, false}, // issue 29's reproduction
		{"sm_90", 6, 0, 4, 2, false, false},
		{"sm_80", 6, 2, 4, 3, false, false},
		{"sm_120", 4, 3, 1, 1, false, false},
		{"sm_90", 4, 1, 3, 2, false, false},
		{"sm_90", 6, 0, 4, 1, true, false},
		{"sm_80", 5, 1, 3, 2, true, true},
		{"sm_90", 6, 0, 4, 3, false, true},
	} {
		t.Run(c.String(), func(t *testing.T) {
			seed := uint64(2900 + i)
			bufs, want := roleTailInputs(c, seed)
			got, _ := runUserKernelOn(t, roleTailKernel(c), target.MustLookup(c.arch), bufs, nil)
			compare(t, "phased loop ending on its role", seed, got, want, 0, 0)
		})
	}
}

// TestRolesPhasedLoopPaddedOperand: the phased loop of TestRolesPhasedLoop on warp
// counts that pad P·V past 64 columns (9 warps: 64 x 144; a score role of 5 or 6
// warps), so legalize masks the padding of the scores, which the score role computes
// but a dot of every warp reads, in the emulator against float64. The mask is the
// score role's op (found by mutating FuzzCompile's seeds: as an op of no role it read
// the role's fragments, and the layout check refused the kernel).
func TestRolesPhasedLoopPaddedOperand(t *testing.T) {
	const m, k, chunks = 64, 64, 3
	for i, c := range []phasedCase{
		{"sm_90", 9, 0, 4, 2},
		{"sm_80", 8, 0, 6, 1},
		{"sm_90", 8, 3, 5, 2},
	} {
		t.Run(fmt.Sprintf("%s_w%d_score%d+%d_s%d", c.arch, c.warps, c.first, c.scoreWarps, c.stages), func(t *testing.T) {
			seed := uint64(2950 + i)
			bufs, want := phasedInputs(seed, m, k, chunks)
			got, _ := runUserKernelOn(t, phasedKernel(c, m, k, chunks), target.MustLookup(c.arch), bufs, nil)
			compare(t, "phased loop with padded scores", seed, got, want, 1e-4, 1e-5)
		})
	}
}

// TestRolesReadsOfOtherWarpsFragments: an op reading fragments that other warps hold
// is refused by the roles pass, naming the value, the reader and the roles, also with
// the pass checks on (found by mutating FuzzCompile's seeds: the layout check refused
// the split the reader inherited first, as a lowering bug); and fragments of no role,
// split over every warp, read on a role of fewer warps are refused too (they were read
// as if the role held all of them). A role of every warp reads them, and the kernel
// matches float64.
func TestRolesReadsOfOtherWarpsFragments(t *testing.T) {
	src, err := os.ReadFile("../ptxgen/testdata/from/phased.ir")
	if err != nil {
		t.Fatal(err)
	}
	phased := string(src)
	// Each case with and without the pass checks (the command line runs without).
	defer func(c bool) { CheckPasses = c }(CheckPasses)
	scoresOnEveryWarp := strings.NewReplacer("%s = dot %at, %xt, %s0 : tile<64x64xf32> on score", "%s = dot %at, %xt, %s0 : tile<64x64xf32>")
	for _, c := range []struct {
		name string
		r    *strings.Replacer
		want string
	}{
		{"cast of the role's scores on every warp", strings.NewReplacer("%ps = cast %s : tile<64x64xbf16> on score", "%ps = cast %s : tile<64x64xbf16>"),
			`roles: %s computed on role "score" is read by %ps = cast %s : tile<64x64xbf16> on every warp (no role): across roles only tiles with a shared home are visible, and this one lives in mma fragments, 2x2 warps`},
		{"a broadcast of the role's row vector that nothing reads", strings.NewReplacer("  %out = mul %accfin, %hb : tile<64x64xf32>\n  store %y[%rows, %z], %out\n", "", "warps 8", "warps 9"),
			`roles: %h computed on role "score" is read by %hb = broadcast %h, 1 : tile<64x72xf32> on every warp (no role): across roles only tiles with a shared home are visible, and this one lives in rows of mma fragments, 2x2 warps`},
		{"scores of every warp reduced on the role", scoresOnEveryWarp,
			`roles: %s computed on every warp (no role) is read by %rmax = reduce max %s, 1 : tile<64xf32> on score: across roles only tiles with a shared home are visible, and this one lives in mma fragments, 4x2 warps`},
	} {
		k, err := ir.Parse(c.r.Replace(phased))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, check := range []bool{true, false} {
			CheckPasses = check
			_, err := Compile(k, target.MustLookup("sm_90"), Options{Check: check})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, checks %v: %v\nwant an error with %s", c.name, check, err, c.want)
			}
		}
	}
	CheckPasses = true
	k, err := ir.Parse(strings.Replace(scoresOnEveryWarp.Replace(phased), "role score 0 4", "role score 0 8", 1))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(2990)
	bufs, want := phasedInputs(seed, 64, 64, 3)
	raw, _ := runBytes(t, k, "sm_90", bufs)
	got := make([]float32, len(raw)/4)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	compare(t, "a role of every warp reading scores of no role", seed, got, want, 1e-4, 1e-5)
}

// TestRolesPhasedLoopCarriesPerThread: a phased loop whose role carries a rank-1 tile
// held per thread (column sums of rows every warp loads), on roles of 1 and 3 warps
// that do not start at warp 0, in the emulator against float64. The role holds the
// elements over its own threads, so the carried registers are set and copied in its
// region (found by mutating FuzzCompile's seeds: they were set up for every thread of
// the CTA, and the role's ops indexed past them, an index out of range).
func TestRolesPhasedLoopCarriesPerThread(t *testing.T) {
	for i, c := range []struct {
		warps, first, RoleWarps, n, rows int
	}{
		{4, 3, 1, 64, 3},
		{4, 1, 3, 200, 4},
		{6, 2, 1, 40, 2},
	} {
		t.Run(fmt.Sprintf("w%d_sum%d+%d_n%d", c.warps, c.first, c.RoleWarps, c.n), func(t *testing.T) {
			b := ir.NewBuilder("colsums")
			x := f32Param(b, "x", c.rows*c.n)
			y := f32Param(b, "y", c.n)
			b.SetWarps(c.warps)
			b.DeclareRole("sum", c.first, c.RoleWarps)
			cols := b.Cast(b.Iota(c.n), ir.I64)
			var zero *ir.Value
			b.OnRole("sum", func() { zero = b.ConstFloat(0, ir.TileOf(ir.F32, c.n)) })
			res := b.For(b.I32(0), b.I32(int64(c.rows)), 1, []*ir.Value{zero}, func(j *ir.Value, cr []*ir.Value) []*ir.Value {
				row := b.Load1(x, b.Add(cols, b.Cast(b.Mul(j, b.I32(int64(c.n))), ir.I64)), nil)
				var next *ir.Value
				b.OnRole("sum", func() { next = b.Add(cr[0], row) })
				return []*ir.Value{next}
			})
			b.OnRole("sum", func() { b.Store1(y, cols, nil, res[0]) })
			seed := uint64(2970 + i)
			rng := rand.New(rand.NewPCG(seed, 31))
			xs := make([]float32, c.rows*c.n)
			want := make([]float64, c.n)
			for k := range xs {
				xs[k] = float32(rng.IntN(17) - 8)
				want[k%c.n] += float64(xs[k])
			}
			got, _ := runUserKernelOn(t, b, target.MustLookup("sm_90"), f32Buffers(map[string][]float32{"x": xs, "y": make([]float32, c.n)}), nil)
			compare(t, "column sums carried per thread on a role", seed, got, want, 0, 0)
		})
	}
}
