package runtime

import (
	"embed"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ptx"
)

// The GPU tests' kernels. They are embedded so the test binary, built here and copied to a
// GPU machine, carries them; TestKernelsAssemble checks them with ptxas in every build, so
// a broken test kernel is caught on CI, not on scarce GPU time.
//
//go:embed testdata/*.ptx
var testPTX embed.FS

func readPTX(t testing.TB, name string) string {
	t.Helper()
	b, err := testPTX.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// vaddKernel is out[i] = a[i] + b[i]*alpha for i < n, built with the ptx model so that the
// GPU test also covers LoadKernel's Module.Print path. Its 32-bit parameters after 64-bit
// ones check the argument layout: if n or alpha were read wrongly, the elements at and past
// n, or the values, would be off.
func vaddKernel(n, blocks int) *ptx.Kernel {
	r := func(s string) ptx.Reg { return ptx.Reg(s) }
	in := func(op string, args ...ptx.Operand) *ptx.Instr { return &ptx.Instr{Op: op, Args: args} }
	param := func(name string) ptx.Addr { return ptx.Addr{Base: ptx.Sym(name)} }
	fn := &ptx.Func{
		Name: "vadd",
		Params: []ptx.Param{
			{Name: "pa", Type: "u64"}, {Name: "pb", Type: "u64"}, {Name: "pout", Type: "u64"},
			{Name: "alpha", Type: "f32"}, {Name: "n", Type: "u32"},
		},
		Regs: []ptx.RegDecl{{Type: "pred", Prefix: "%p", Count: 2}, {Type: "b32", Prefix: "%r", Count: 8}, {Type: "f32", Prefix: "%f", Count: 6}, {Type: "b64", Prefix: "%rd", Count: 12}},
		Body: []ptx.Stmt{
			in("mov.u32", r("%r1"), r("%ctaid.x")),
			in("mov.u32", r("%r2"), r("%ntid.x")),
			in("mov.u32", r("%r3"), r("%tid.x")),
			in("mad.lo.u32", r("%r4"), r("%r1"), r("%r2"), r("%r3")),
			in("ld.param.u32", r("%r5"), param("n")),
			in("setp.ge.u32", r("%p1"), r("%r4"), r("%r5")),
			&ptx.Instr{Guard: "%p1", Op: "bra", Args: []ptx.Operand{ptx.Sym("DONE")}},
			in("ld.param.u64", r("%rd1"), param("pa")),
			in("ld.param.u64", r("%rd2"), param("pb")),
			in("ld.param.u64", r("%rd3"), param("pout")),
			in("ld.param.f32", r("%f1"), param("alpha")),
			in("cvta.to.global.u64", r("%rd1"), r("%rd1")),
			in("cvta.to.global.u64", r("%rd2"), r("%rd2")),
			in("cvta.to.global.u64", r("%rd3"), r("%rd3")),
			in("mul.wide.u32", r("%rd4"), r("%r4"), ptx.Imm(4)),
			in("add.u64", r("%rd5"), r("%rd1"), r("%rd4")),
			in("add.u64", r("%rd6"), r("%rd2"), r("%rd4")),
			in("add.u64", r("%rd7"), r("%rd3"), r("%rd4")),
			in("ld.global.f32", r("%f2"), ptx.Addr{Base: r("%rd5")}),
			in("ld.global.f32", r("%f3"), ptx.Addr{Base: r("%rd6")}),
			in("mul.rn.f32", r("%f4"), r("%f3"), r("%f1")),
			in("add.rn.f32", r("%f5"), r("%f2"), r("%f4")),
			in("st.global.f32", ptx.Addr{Base: r("%rd7")}, r("%f5")),
			&ptx.Label{Name: "DONE"},
			in("ret"),
		},
	}
	bytes := int64(blocks * 256 * 4)
	return &ptx.Kernel{
		Module: &ptx.Module{Version: "7.0", Target: "sm_80", AddressSize: 64, Funcs: []*ptx.Func{fn}},
		Name:   "vadd",
		Grid:   [3]int{blocks, 1, 1},
		Block:  256,
		Params: []ptx.KParam{
			{Name: "pa", Kind: "ptr", Elem: "f32", Bytes: bytes, Align: 4},
			{Name: "pb", Kind: "ptr", Elem: "f32", Bytes: bytes, Align: 4},
			{Name: "pout", Kind: "ptr", Elem: "f32", Bytes: bytes, Align: 4, Written: true},
			{Name: "alpha", Kind: "f32"},
			{Name: "n", Kind: "u32"},
		},
	}
}

// mmaFacts are the launch facts of testdata/mma_bf16.ptx: one warp, A 16x16 bf16,
// B 8x16 bf16 (the transposed, .col operand), D 16x8 f32.
func mmaFacts() *ptx.Kernel {
	return &ptx.Kernel{
		Name:  "mma_bf16",
		Grid:  [3]int{1, 1, 1},
		Block: 32,
		Params: []ptx.KParam{
			{Name: "pa", Kind: "ptr", Elem: "bf16", Bytes: 16 * 16 * 2, Align: 4},
			{Name: "pb", Kind: "ptr", Elem: "bf16", Bytes: 8 * 16 * 2, Align: 4},
			{Name: "pd", Kind: "ptr", Elem: "f32", Bytes: 16 * 8 * 4, Align: 8, Written: true},
		},
	}
}

// smemWords is the number of 32-bit words in testdata/smem100k.ptx's shared array.
const smemWords = 25600

// smemFacts are the launch facts of testdata/smem100k.ptx: 100 KiB of dynamic shared memory.
func smemFacts() *ptx.Kernel {
	return &ptx.Kernel{
		Name:        "smem100k",
		Grid:        [3]int{1, 1, 1},
		Block:       256,
		SharedBytes: smemWords * 4,
		Params:      []ptx.KParam{{Name: "pout", Kind: "ptr", Elem: "u32", Bytes: smemWords * 4, Align: 4, Written: true}},
	}
}

// TestKernelsAssemble runs the GPU tests' kernels through ptxas (and the launch facts
// through CheckFacts), so they are known-good PTX before any GPU sees them.
func TestKernelsAssemble(t *testing.T) {
	ptxas.Require(t)
	vadd := vaddKernel(1000, 4)
	if err := CheckFacts(vadd); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		facts      *ptx.Kernel
	}{
		{"vadd (model)", vadd.Module.Print(), vadd},
		{"mma_bf16.ptx", readPTX(t, "mma_bf16.ptx"), mmaFacts()},
		{"smem100k.ptx", readPTX(t, "smem100k.ptx"), smemFacts()},
	} {
		if err := CheckFacts(tc.facts); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		for _, arch := range []string{"sm_80", "sm_90"} {
			res, err := ptxas.Assemble(tc.text, arch)
			if err != nil {
				t.Errorf("%s for %s: %v", tc.name, arch, err)
				continue
			}
			if len(res.Warnings) > 0 || res.LocalBytes > 0 {
				t.Errorf("%s for %s: warnings %q, %d bytes local memory", tc.name, arch, res.Warnings, res.LocalBytes)
			}
		}
	}
	if _, err := ptxas.Assemble(readPTX(t, "bad.ptx"), "sm_80"); err == nil || !strings.Contains(err.Error(), "line 13") {
		t.Errorf("bad.ptx: got %v, want an error at line 13", err)
	}
}
