package lower

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// compileTo runs the pipeline on a copy of k (newFn, as Compile starts it) up
// to and including pass last, without the checks, and returns the compilation
// state.
func compileTo(t *testing.T, k *ir.Kernel, targetName, last string, opt Options) *fn {
	t.Helper()
	tg, err := target.LookupTarget(targetName)
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFn(k, tg, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Passes {
		if err := p.run(f); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if p.Name == last {
			return f
		}
	}
	t.Fatalf("no pass %q", last)
	return nil
}

// gemmKernel and mlaKernel read the real kernels from testdata/kernels, which
// kernels' TestLowerTestdataKernels holds to the builders (lower's tests cannot
// import kernels, which imports lower).
func gemmKernel(t *testing.T, m, n, k int) *ir.Kernel {
	t.Helper()
	return testdataKernel(t, fmt.Sprintf("gemm_%dx%dx%d", m, n, k))
}

// mlaKernel is the default mla_decode (split scores, several loops, shared
// arrays that reuse each other's bytes) for a call of tokens rows: the same IR on
// every target (16-head CTAs, 32-candidate tiles).
func mlaKernel(t *testing.T, tokens int) *ir.Kernel {
	t.Helper()
	return testdataKernel(t, fmt.Sprintf("mla_decode_t%d", tokens))
}

// twoRingsKernel has two pipelined loops one after the other, so the second
// loop's ring reuses the first one's bytes (smem records them as aliases).
func twoRingsKernel(t *testing.T) *ir.Kernel {
	t.Helper()
	b := ir.NewBuilder("two_rings")
	b.SetGrid(1, 1, 1)
	b.SetWarps(4)
	x := b.Param("x", ir.PtrTo(ir.F32), 16, 0)
	y := b.Param("y", ir.PtrTo(ir.F32), 16, 0)
	rows := b.Mul(b.Cast(b.Iota(16), ir.I64), b.I64(32))
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, 16, 32))
	for loop := range 2 {
		acc = b.ForStages(b.I32(0), b.I32(3), 1, 2, []*ir.Value{acc}, func(j *ir.Value, st []*ir.Value) []*ir.Value {
			col := b.Cast(b.Mul(b.Add(j, b.I32(int64(3*loop))), b.I32(32*16)), ir.I64)
			return []*ir.Value{b.Add(st[0], b.Load2(x, rows, col, 32, nil, nil))}
		})[0]
	}
	b.Store2(y, rows, b.I64(0), nil, nil, acc)
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testdataKernel(t *testing.T, name string) *ir.Kernel {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "kernels", name+".ir"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(string(text))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return k
}

// TestChecksPassOnRealKernels: every pass's check accepts what the passes build
// for gemm and mla_decode (the checks also run inside every Compile of the tests).
func TestChecksPassOnRealKernels(t *testing.T) {
	for _, tg := range target.TargetNames() {
		for _, k := range []*ir.Kernel{gemmKernel(t, 17, 9, 33), gemmKernel(t, 100, 72, 448), mlaKernel(t, 1), mlaKernel(t, 64)} {
			f := compileTo(t, k, tg, "sync", Options{})
			for _, p := range Passes {
				if p.check == nil {
					continue
				}
				if err := p.check(f); err != nil {
					t.Errorf("%s %s: check of %s: %v", k.Name, tg, p.Name, err)
				}
			}
		}
	}
}

// blank replaces the n-th instruction with opcode op by a comment (keeping the
// positions the sync trace refers to) and reports whether there was one.
func blank(f *fn, op string, n int) bool {
	body := f.out.Module.Funcs[0].Body
	for i, s := range body {
		if in, ok := s.(*ptx.Instr); ok && in.Op == op {
			if n == 0 {
				body[i] = &ptx.Comment{Text: "removed " + op}
				return true
			}
			n--
		}
	}
	return false
}

// TestSyncCheckCatchesMissingSync: removing any single barrier or cp.async wait
// that the sync pass wrote for gemm or mla_decode is reported (none of them is
// redundant).
func TestSyncCheckCatchesMissingSync(t *testing.T) {
	for _, k := range []*ir.Kernel{gemmKernel(t, 100, 72, 448), mlaKernel(t, 1), mlaKernel(t, 64)} {
		for _, op := range []string{"bar.sync", "cp.async.wait_group"} {
			caught, total := 0, 0
			for n := 0; ; n++ {
				f := compileTo(t, k, "sm_90", "sync", Options{})
				if !blank(f, op, n) {
					break
				}
				total++
				if err := checkSync(f); err != nil {
					caught++
					if !strings.Contains(err.Error(), "sync check") {
						t.Errorf("error does not name the check: %v", err)
					}
				}
			}
			if total == 0 || caught != total {
				t.Errorf("%s: removing one of %d %s: %d caught", k.Name, total, op, caught)
			}
		}
	}
}

// TestSyncCheckNamedBarriers: a bar.sync of fewer threads than the CTA, or a
// bar.arrive, in place of one of the sync pass's barriers is caught; a named
// barrier of every thread serves as well as bar.sync 0.
func TestSyncCheckNamedBarriers(t *testing.T) {
	k := mlaKernel(t, 64)
	all := ptx.Imm(32 * k.Warps)
	for _, c := range []struct {
		args []ptx.Operand
		op   string
		ok   bool
	}{
		{[]ptx.Operand{ptx.Imm(1), ptx.Imm(32)}, "bar.sync", false},
		{[]ptx.Operand{ptx.Imm(1), all}, "bar.arrive", false},
		{[]ptx.Operand{ptx.Imm(1), all}, "bar.sync", true},
	} {
		f := compileTo(t, k, "sm_90", "sync", Options{})
		for _, s := range f.out.Module.Funcs[0].Body {
			if in, ok := s.(*ptx.Instr); ok && in.Op == "bar.sync" {
				in.Op, in.Args = c.op, c.args
				break
			}
		}
		err := checkSync(f)
		if c.ok && err != nil {
			t.Errorf("%s %v in place of the first bar.sync 0: %v", c.op, c.args, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "sync check")) {
			t.Errorf("%s %v in place of the first bar.sync 0: error %v, want the sync check's", c.op, c.args, err)
		}
	}
}

// TestLayoutChecksCatchDefects plants one defect per check and expects it named.
func TestLayoutChecksCatchDefects(t *testing.T) {
	k := mlaKernel(t, 64)
	cases := []struct {
		name, after, want string
		plant             func(f *fn)
	}{
		{"missing layout", "layout", "has no layout", func(f *fn) {
			delete(f.Layouts, f.Kernel.Body.Ops[len(f.Kernel.Body.Ops)-1].Args[len(f.Kernel.Body.Ops[len(f.Kernel.Body.Ops)-1].Args)-1])
		}},
		{"bad warp split", "layout", "warps", func(f *fn) {
			for v, l := range f.Layouts {
				if l.Kind == decision.Acc {
					l.WM *= 2
					f.Layouts[v] = l
					return
				}
			}
		}},
		{"unstaged dot operand", "stage", "no shared home", func(f *fn) {
			for v := range f.Staged {
				if v.Type.Rank() == 2 {
					delete(f.Staged, v)
					return
				}
			}
		}},
		{"home outside the allocation", "smem", "outside", func(f *fn) {
			for v := range f.Staged {
				h := f.Homes[v]
				h.Offset = f.SmemBytes
				f.Homes[v] = h
				return
			}
		}},
		{"even pitch for a dot operand", "smem", "bank conflicts", func(f *fn) {
			ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
				if o.Kind == ir.OpDot {
					for _, v := range o.Args[:2] {
						if h, ok := f.Homes[v]; ok && f.Layouts[v].Kind != decision.Shared && h.Pitch/16%2 == 1 {
							h.Pitch += 16
							f.Homes[v] = h
						}
					}
				}
			})
		}},
		{"shared bytes without alias", "smem", "not recorded as aliases", func(f *fn) { clear(f.Aliases) }},
		{"unmarked row reduction", "rowreduce", "unmarked", func(f *fn) { clear(f.rowReduced) }},
	}
	for _, c := range cases {
		k := k
		if c.name == "shared bytes without alias" {
			k = twoRingsKernel(t) // the decode's shared arrays all live across its one loop
		}
		f := compileTo(t, k, "sm_90", c.after, Options{})
		var check func(*fn) error
		for _, p := range Passes {
			if p.Name == c.after {
				check = p.check
			}
		}
		if err := check(f); err != nil {
			t.Fatalf("%s: check fails before the defect: %v", c.name, err)
		}
		c.plant(f)
		if err := check(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check after %s says %v; want an error containing %q", c.name, c.after, err, c.want)
		}
	}
}

// TestChecksOnInTests: every Compile in a test binary runs the checks.
func TestChecksOnInTests(t *testing.T) {
	if !CheckPasses {
		t.Fatal("CheckPasses is off in a test binary")
	}
}
