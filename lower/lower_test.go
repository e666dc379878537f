package lower

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/runtime"
	"github.com/ptxgen/ptxgen/target"
)

func TestSharedPitchIsAnOddMultipleOf16(t *testing.T) {
	for _, row := range []int{1, 2, 16, 18, 64, 128, 144, 1024} {
		p := sharedPitch(row)
		if p < row || p%16 != 0 || p/16%2 != 1 {
			t.Errorf("sharedPitch(%d) = %d: want >= %d, a multiple of 16, an odd number of 16-byte units", row, p, row)
		}
	}
}

func TestChooseWarpGrid(t *testing.T) {
	cases := []struct{ mt, nt, warps, wm, wn int }{
		{4, 9, 4, 4, 1}, // whole rows per warp preferred
		{1, 8, 4, 1, 4}, // one m16 tile: split the columns
		{2, 4, 8, 2, 4},
		{1, 1, 1, 1, 1},
	}
	for _, c := range cases {
		wm, wn, err := ChooseWarpGrid(c.mt, c.nt, c.warps)
		if err != nil || wm != c.wm || wn != c.wn {
			t.Errorf("ChooseWarpGrid(%d, %d, %d) = %d, %d, %v; want %d, %d", c.mt, c.nt, c.warps, wm, wn, err, c.wm, c.wn)
		}
	}
	if _, _, err := ChooseWarpGrid(1, 1, 4); err == nil || !strings.Contains(err.Error(), "1x1 mma tiles") || !strings.Contains(err.Error(), "that split it: 1)") {
		t.Errorf("want an error naming the tile grid and the one warp count that fits, got %v", err)
	}
	if _, _, err := ChooseWarpGrid(2, 3, 4); err == nil || !strings.Contains(err.Error(), "that split it: 1, 2, 3, 6)") {
		t.Errorf("2x3 tiles split over 1, 2, 3 and 6 warps; got %v", err)
	}
}

// TestRegBudget: the budget keeps the CTAs per SM that shared memory allows and
// leaves room for the carried fragments.
func TestRegBudget(t *testing.T) {
	sm90, _ := target.LookupTarget("sm_90")
	if got := regBudget(sm90, 128, 74*1024, 60); got != 168 {
		t.Errorf("3 CTAs of 128 threads fit by shared memory: budget %d, want 168", got)
	}
	if got := regBudget(sm90, 128, 74*1024, 100); got != 255 {
		t.Errorf("100 carried registers need more than 168: budget %d, want 255", got)
	}
	if got := regBudget(sm90, 256, 0, 0); got != 128 {
		t.Errorf("256 threads and no shared memory: budget %d, want 128 (2 CTAs at the 128-register floor)", got)
	}
}

func tinyKernel(t *testing.T, rows int) *ir.Kernel { return tinyKernelCols(t, rows, 16) }

// tinyKernelCols computes o = a·aᵀ for a [rows x cols] bf16 tile a.
func tinyKernelCols(t *testing.T, rows, cols int) *ir.Kernel {
	b := ir.NewBuilder("tiny")
	b.SetWarps(1)
	p := b.Param("p", ir.PtrTo(ir.BF16), 16, 0)
	o := b.Param("o", ir.PtrTo(ir.F32), 16, 0)
	r := b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(int64(cols)))
	a := b.Load2(p, r, b.I64(0), cols, nil, nil)
	c := b.Dot(a, b.Trans(a), b.ConstFloat(0, ir.TileOf(ir.F32, rows, rows)))
	b.Store2(o, b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(int64(rows))), b.I64(0), nil, nil, c)
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCompileErrors(t *testing.T) {
	k := tinyKernel(t, 16)
	if _, err := Compile(k, target.MustLookup("sm_90"), Options{After: "regalloc"}); err == nil || !strings.Contains(err.Error(), "legalize") {
		t.Errorf("unknown pass: %v", err)
	}
	// 128 rows of 512 bf16 in shared memory (pitch 1040): 130 KB, fine on sm_90 ...
	if _, err := Compile(tinyKernelCols(t, 128, 512), target.MustLookup("sm_90"), Options{}); err != nil {
		t.Errorf("130 KB on sm_90: %v", err)
	}
	// ... but more than sm_120's 99 KB.
	_, err := Compile(tinyKernelCols(t, 128, 512), target.MustLookup("sm_120"), Options{})
	if err == nil || !strings.Contains(err.Error(), "sm_120 allows at most 101376") {
		t.Errorf("shared memory over the limit: %v", err)
	}
}

// TestEveryPassDumps: each pass's dump is the IR (or, for emit, PTX) after it.
func TestEveryPassDumps(t *testing.T) {
	k := tinyKernel(t, 12)
	for _, p := range PassNames() {
		res, err := Compile(k, target.MustLookup("sm_90"), Options{After: p})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := "kernel tiny("
		if p == "emit" || p == "sync" {
			want = ".entry tiny("
		}
		if !strings.Contains(res.Dump, want) {
			t.Errorf("dump after %s lacks %q", p, want)
		}
		if p == "sync" && strings.Contains(res.Dump, "// sync:") {
			t.Errorf("dump after sync still has sync points:\n%s", res.Dump)
		}
	}
	res, _ := Compile(k, target.MustLookup("sm_90"), Options{After: "legalize"})
	if !strings.Contains(res.Dump, "tile<16x16xf32>  // logical 12x12") {
		t.Errorf("12 rows pad to one m16 tile, 12 columns to two n8 tiles:\n%s", res.Dump)
	}
}

// TestGridDependency: in a program of two kernels on sm_90 and later, the first lets
// the second launch early and the second waits for it before anything else, and is
// marked Programmatic for launchers; older targets get neither instruction.
func TestGridDependency(t *testing.T) {
	p := &ir.Program{Name: "two", Kernels: []*ir.Kernel{tinyKernel(t, 16), tinyKernel(t, 16)}}
	for _, tname := range target.TargetNames() {
		tg := target.MustLookup(tname)
		c, err := CompileProgram(p, nil, tg)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range c.Kernels {
			var ops []string
			for _, s := range k.Module.Funcs[i].Body {
				if in, ok := s.(*ptx.Instr); ok && strings.HasPrefix(in.Op, "griddepcontrol") {
					ops = append(ops, in.Op)
				}
			}
			var want []string
			switch {
			case !tg.GridDependency:
			case i == 0:
				want = []string{"griddepcontrol.launch_dependents"}
			default:
				want = []string{"griddepcontrol.wait"}
			}
			if strings.Join(ops, ",") != strings.Join(want, ",") || k.Programmatic != (i > 0 && tg.GridDependency) {
				t.Errorf("%s kernel %d: griddepcontrol %v, Programmatic %v; want %v, %v", tname, i, ops, k.Programmatic, want, i > 0 && tg.GridDependency)
			}
			// The launchers' own check: a Programmatic kernel waits before touching memory.
			if err := runtime.CheckFacts(k); err != nil {
				t.Errorf("%s kernel %d: %v", tname, i, err)
			}
		}
	}
	if c, _ := CompileProgram(&ir.Program{Name: "one", Kernels: []*ir.Kernel{tinyKernel(t, 16)}}, nil, target.MustLookup("sm_90")); strings.Contains(c.Module.Print(), "griddepcontrol") {
		t.Errorf("a program of one kernel needs no grid dependency control")
	}
}
