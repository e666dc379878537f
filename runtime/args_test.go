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
