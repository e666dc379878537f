package runtime

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// gemmFacts is a kernel shaped like the generator's output: pointers with sizes and
// alignment, and a 32-bit scalar that must be a multiple of 16.
func gemmFacts() *ptx.Kernel {
	return &ptx.Kernel{
		Name:  "gemm",
		Grid:  [3]int{4, 1, 1},
		Block: 128,
		Params: []ptx.KParam{
			{Name: "a", Kind: "ptr", Elem: "bf16", Bytes: 1024, Align: 16},
			{Name: "c", Kind: "ptr", Elem: "f32", Bytes: 2048, Align: 16, Written: true},
			{Name: "k", Kind: "i32", Align: 16},
			{Name: "alpha", Kind: "f32"},
		},
	}
}

// buf fakes a device buffer: CheckArgs only looks at address, size and state.
func buf(ptr uint64, size int64) *Buffer { return &Buffer{ptr: ptr, size: size} }

func TestCheckArgs(t *testing.T) {
	k := gemmFacts()
	good := func() []Arg {
		return []Arg{Ptr(buf(0x7f0000000000, 1024)), Ptr(buf(0x7f0000001000, 4096)), I32(64), F32(0.5)}
	}
	if err := CheckArgs(k, good()); err != nil {
		t.Fatalf("good arguments rejected: %v", err)
	}
	freed := buf(0x7f0000000000, 1024)
	freed.freed = true
	for _, tc := range []struct {
		name  string
		edit  func([]Arg) []Arg
		index int    // want ArgError.Index
		want  string // substring of the message
	}{
		{"too few", func(a []Arg) []Arg { return a[:3] }, -1, "got 3 arguments, kernel takes 4 (a ptr, c ptr, k i32, alpha f32)"},
		{"too many", func(a []Arg) []Arg { return append(a, I32(1)) }, -1, "got 5 arguments"},
		{"scalar for pointer", func(a []Arg) []Arg { a[0] = I64(5); return a }, 0, "kernel takes a device pointer to bf16, got scalar i64(5)"},
		{"pointer for scalar", func(a []Arg) []Arg { a[2] = a[0]; return a }, 2, "kernel takes scalar i32, got a pointer"},
		{"wrong scalar type", func(a []Arg) []Arg { a[2] = U32(64); return a }, 2, "kernel takes i32, got u32(64)"},
		{"f32 as i32", func(a []Arg) []Arg { a[3] = I32(1); return a }, 3, "kernel takes f32, got i32(1)"},
		{"nil buffer", func(a []Arg) []Arg { a[1] = Ptr(nil); return a }, 1, "nil buffer"},
		{"freed buffer", func(a []Arg) []Arg { a[0] = Ptr(freed); return a }, 0, "buffer was freed"},
		{"small buffer", func(a []Arg) []Arg { a[1] = Ptr(buf(0x7f0000001000, 2000)); return a }, 1, "buffer is 2000 bytes, kernel may access 2048"},
		{"misaligned", func(a []Arg) []Arg { a[0] = Ptr(buf(0x7f0000000008, 2048)); return a }, 0, "not 16-byte aligned"},
		{"indivisible", func(a []Arg) []Arg { a[2] = I32(72); return a }, 2, "value i32(72) must be a multiple of 16"},
		{"negative indivisible", func(a []Arg) []Arg { a[2] = I32(-8); return a }, 2, "must be a multiple of 16"},
		{"zero Arg", func(a []Arg) []Arg { a[3] = Arg{}; return a }, 3, "zero Arg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckArgs(k, tc.edit(good()))
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("got %v, want an *ArgError", err)
			}
			if ae.Index != tc.index {
				t.Errorf("Index = %d, want %d (%v)", ae.Index, tc.index, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if tc.index >= 0 && !strings.Contains(err.Error(), "argument "+string(rune('0'+tc.index))+" ("+k.Params[tc.index].Name+")") {
				t.Errorf("error %q does not name the argument", err)
			}
		})
	}
	// Negative multiples and unknown sizes are fine.
	ok := good()
	ok[2] = I32(-32)
	k.Params[0].Bytes = 0
	ok[0] = Ptr(buf(0x7f0000000000, 1))
	if err := CheckArgs(k, ok); err != nil {
		t.Errorf("rejected: %v", err)
	}
}

// TestMarshal pins the layout gorgonia.org/cu's Launch needs: one 8-byte slot per
// argument, 32-bit values zero-extended in the low half.
func TestMarshal(t *testing.T) {
	got := marshal([]Arg{Ptr(buf(0x7f00deadbe00, 16)), I32(-1), U32(7), F32(1.5), I64(-2), F64(2.5), U64(1 << 40)})
	want := []uint64{0x7f00deadbe00, 0xffffffff, 7, uint64(math.Float32bits(1.5)), 0xfffffffffffffffe, math.Float64bits(2.5), 1 << 40}
	if len(got) != len(want) {
		t.Fatalf("marshal = %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slot %d = %#x, want %#x", i, got[i], want[i])
		}
	}
}

func TestCheckFacts(t *testing.T) {
	mod := &ptx.Module{Version: "7.0", Target: "sm_80", AddressSize: 64, Funcs: []*ptx.Func{{
		Name:    "gemm",
		ReqNTid: 128,
		Params:  []ptx.Param{{Name: "a", Type: "u64"}, {Name: "c", Type: "u64"}, {Name: "k", Type: "u32"}, {Name: "alpha", Type: "f32"}},
	}}}
	k := gemmFacts()
	k.Module = mod
	if err := CheckFacts(k); err != nil {
		t.Fatalf("good facts rejected: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(k *ptx.Kernel)
		want string
	}{
		{"zero grid", func(k *ptx.Kernel) { k.Grid[1] = 0 }, "grid dimension 1 is 0"},
		{"grid y past CUDA's limit", func(k *ptx.Kernel) { k.Grid[1] = 65536 }, "grid dimension 1 is 65536, want 1..65535"},
		{"grid z past CUDA's limit", func(k *ptx.Kernel) { k.Grid[2] = 1 << 20 }, "grid dimension 2 is 1048576, want 1..65535"},
		{"grid x past CUDA's limit", func(k *ptx.Kernel) { k.Grid[0] = 1 << 31 }, "grid dimension 0 is 2147483648, want 1..2147483647"},
		{"big block", func(k *ptx.Kernel) { k.Block = 2048 }, "block of 2048 threads"},
		{"reqntid", func(k *ptx.Kernel) { k.Block = 256 }, ".reqntid 128 but launch block is 256"},
		{"unknown kind", func(k *ptx.Kernel) { k.Params[2].Kind = "int" }, `unknown kind "int"`},
		{"no entry", func(k *ptx.Kernel) { k.Name = "other" }, "module has no entry other"},
		{"param count", func(k *ptx.Kernel) { k.Params = k.Params[:3] }, "PTX entry has 4 parameters, launch facts list 3"},
		{"param size", func(k *ptx.Kernel) { k.Params[2].Kind = "i64" }, "parameter 2 (k) is .u32 in PTX (4 bytes) but kind i64 (8 bytes)"},
		{"negative smem", func(k *ptx.Kernel) { k.SharedBytes = -1 }, "negative shared memory"},
		{"programmatic without wait", func(k *ptx.Kernel) { k.Programmatic = true }, "does not execute griddepcontrol.wait before touching memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := gemmFacts()
			k.Module = mod
			tc.edit(k)
			err := CheckFacts(k)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckFacts = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestArgString(t *testing.T) {
	for _, tc := range []struct {
		a    Arg
		want string
	}{{I32(-3), "i32(-3)"}, {U32(3), "u32(3)"}, {F32(0.25), "f32(0.25)"}, {Ptr(nil), "ptr(nil)"}, {Ptr(buf(0x100, 8)), "ptr(0x100, 8 bytes)"}, {Arg{}, "invalid Arg"}} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestCheckStrides: stride arguments are bounded by the buffers they address (issue
// 22: negative strides, zero strides over several rows, and strides past the dense
// one with a dense-sized buffer all used to pass). The facts are shaped like
// gemm's A (4 rows of 8 bf16, lda) and mla_decode's q (rows x 2 heads of 8 bf16) and
// cache (pages of 64 bytes for 16 slots, from slots).
func TestCheckStrides(t *testing.T) {
	k := &ptx.Kernel{
		Name: "strided", Grid: [3]int{1, 8, 1}, GridParam: [3]string{"", "rows"}, Block: 32,
		Params: []ptx.KParam{
			{Name: "rows", Kind: "i32"},
			{Name: "a", Kind: "ptr", Elem: "bf16", Bytes: 64, Run: 8, Strides: []ptx.StrideDim{{Stride: "lda", Count: 4}}},
			{Name: "lda", Kind: "i64"},
			{Name: "q", Kind: "ptr", Elem: "bf16", PerRow: 32, Run: 8, Strides: []ptx.StrideDim{{Stride: "q_stride_h", Count: 2}, {Stride: "q_stride_t", CountParam: "rows", CountDiv: 1}}},
			{Name: "q_stride_t", Kind: "i64"},
			{Name: "q_stride_h", Kind: "i64"},
			{Name: "cache", Kind: "ptr", Elem: "u8", Run: 64, Strides: []ptx.StrideDim{{Stride: "page_stride", CountParam: "slots", CountDiv: 16}}},
			{Name: "page_stride", Kind: "i64"},
			{Name: "slots", Kind: "i32"},
		},
	}
	type call struct {
		rows               int32
		aBytes, lda        int64
		qBytes, qst, qsh   int64
		cacheBytes, stride int64
		slots              int32
	}
	dense := call{rows: 2, aBytes: 64, lda: 8, qBytes: 64, qst: 16, qsh: 8, cacheBytes: 128, stride: 64, slots: 32}
	args := func(c call) []Arg {
		return []Arg{I32(c.rows), Ptr(buf(0x1000, c.aBytes)), I64(c.lda), Ptr(buf(0x2000, c.qBytes)), I64(c.qst), I64(c.qsh),
			Ptr(buf(0x3000, c.cacheBytes)), I64(c.stride), I32(c.slots)}
	}
	for _, c := range []struct {
		name  string
		edit  func(*call)
		index int    // the refused argument, -1: accepted
		want  string // in the message
	}{
		{"dense", func(*call) {}, -1, ""},
		{"wider lda, buffer for it", func(c *call) { c.lda, c.aBytes = 16, (3*16+8)*2 }, -1, ""},
		{"negative lda", func(c *call) { c.lda = -8 }, 1, "lda = -8"},
		{"zero lda", func(c *call) { c.lda = 0 }, 1, "lda = 0: want at least 8"},
		{"overlapping lda", func(c *call) { c.lda = 4 }, 1, "lda = 4: want at least 8"},
		{"wider lda, dense buffer", func(c *call) { c.lda = 16 }, 1, "buffer is 64 bytes, the strides reach 112"},
		{"huge lda", func(c *call) { c.lda = 1 << 62 }, 1, "lda = 4611686018427387904"},
		{"zero q_stride_t", func(c *call) { c.qst = 0 }, 3, "q_stride_t = 0: want at least 16"},
		{"q_stride_t over the heads", func(c *call) { c.qst = 12 }, 3, "q_stride_t = 12: want at least 16"},
		{"negative q_stride_h", func(c *call) { c.qsh = -1 }, 3, "q_stride_h = -1"},
		{"wider q_stride_t, dense buffer", func(c *call) { c.qst = 24 }, 3, "the strides reach 80"},
		{"one row: q_stride_t unused", func(c *call) { c.rows, c.qst, c.qBytes = 1, 0, 32 }, -1, ""},
		{"no rows", func(c *call) { c.rows, c.qst, c.qBytes = 0, 0, 0 }, -1, ""},
		{"zero page stride", func(c *call) { c.stride = 0 }, 6, "page_stride = 0: want at least 64"},
		{"more slots than the pool", func(c *call) { c.slots = 33 }, 6, "the strides reach 192"},
		{"no slots", func(c *call) { c.slots, c.cacheBytes = 0, 0 }, -1, ""},
	} {
		cl := dense
		c.edit(&cl)
		err := CheckArgs(k, args(cl))
		if c.index < 0 {
			if err != nil {
				t.Errorf("%s: %v, want it accepted", c.name, err)
			}
			continue
		}
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Index != c.index || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want argument %d refused with %q", c.name, err, c.index, c.want)
		}
	}
}
