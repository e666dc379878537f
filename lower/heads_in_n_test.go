package lower

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

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
