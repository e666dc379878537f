package runtime

import (
	"fmt"
	"math"
	"strings"

	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Arg is one kernel argument: a device buffer (Ptr) or a scalar (I32, U32, I64, U64, F32,
// F64). Arguments carry their type so that Launch can check them against the kernel's
// parameters before the driver silently reinterprets bits.
type Arg struct {
	kind string // "ptr" or a scalar kind as in ptx.KParam.Kind
	bits uint64 // scalar value: the raw bits, zero-extended for 32-bit kinds
	buf  *Buffer
}

// Ptr passes the device address of b.
func Ptr(b *Buffer) Arg { return Arg{kind: "ptr", buf: b} }

// I32 passes a signed 32-bit scalar (.s32/.u32/.b32 parameter of kind "i32").
func I32(v int32) Arg { return Arg{kind: "i32", bits: uint64(uint32(v))} }

// U32 passes an unsigned 32-bit scalar (kind "u32").
func U32(v uint32) Arg { return Arg{kind: "u32", bits: uint64(v)} }

// I64 passes a signed 64-bit scalar (kind "i64").
func I64(v int64) Arg { return Arg{kind: "i64", bits: uint64(v)} }

// U64 passes an unsigned 64-bit scalar (kind "u64").
func U64(v uint64) Arg { return Arg{kind: "u64", bits: v} }

// F32 passes a float32 scalar (kind "f32").
func F32(v float32) Arg { return Arg{kind: "f32", bits: uint64(math.Float32bits(v))} }

// F64 passes a float64 scalar (kind "f64").
func F64(v float64) Arg { return Arg{kind: "f64", bits: math.Float64bits(v)} }

// String renders the argument for error messages.
func (a Arg) String() string {
	switch a.kind {
	case "ptr":
		if a.buf == nil {
			return "ptr(nil)"
		}
		return fmt.Sprintf("ptr(%#x, %d bytes)", a.buf.ptr, a.buf.size)
	case "i32":
		return fmt.Sprintf("i32(%d)", int32(uint32(a.bits)))
	case "u32":
		return fmt.Sprintf("u32(%d)", uint32(a.bits))
	case "i64":
		return fmt.Sprintf("i64(%d)", int64(a.bits))
	case "u64":
		return fmt.Sprintf("u64(%d)", a.bits)
	case "f32":
		return fmt.Sprintf("f32(%g)", math.Float32frombits(uint32(a.bits)))
	case "f64":
		return fmt.Sprintf("f64(%g)", math.Float64frombits(a.bits))
	}
	return "invalid Arg"
}

// kindBytes is the parameter size of each kind the generator emits; pointers are .u64.
var kindBytes = map[string]int{"ptr": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8}

// CheckArgs checks args against a kernel's parameters, in the order the driver will see
// them: count, kind (pointer or the exact scalar type), for pointers a live buffer of at
// least Bytes bytes whose address is a multiple of Align, and for integer scalars a value
// divisible by Align (the generated code relies on it, e.g. "K is a multiple of 16").
// Errors are *ArgError values naming the argument.
//
// A kernel whose grid is bound to its rows (ptx.Kernel.GridParam) takes them as an i32
// argument in 0..MaxRows (the capacity it was generated for); buffer sizes are then
// checked for that many rows (KParam.MinBytes). A kernel with a split parameter takes
// it as an i32 in 1..MaxSplit; per-part sizes are checked for rows x split.
func CheckArgs(k *ptx.Kernel, args []Arg) error {
	if len(args) != len(k.Params) {
		return &ArgError{Kernel: k.Name, Index: -1, Msg: fmt.Sprintf("got %d arguments, kernel takes %d (%s)", len(args), len(k.Params), paramList(k.Params))}
	}
	rows, err := Rows(k, args)
	if err != nil {
		return err
	}
	split, err := Split(k, args)
	if err != nil {
		return err
	}
	for i, p := range k.Params {
		a := args[i]
		bad := func(format string, v ...any) error {
			return &ArgError{Kernel: k.Name, Index: i, Name: p.Name, Msg: fmt.Sprintf(format, v...)}
		}
		if a.kind == "" {
			return bad("zero Arg (use Ptr, I32, F32, ...)")
		}
		if p.Kind == "ptr" {
			if a.kind != "ptr" {
				return bad("kernel takes a device pointer to %s, got scalar %v", p.Elem, a)
			}
			b := a.buf
			switch {
			case b == nil:
				return bad("nil buffer")
			case b.freed:
				return bad("buffer was freed")
			case b.size < p.MinBytes(rows, split):
				return bad("buffer is %d bytes, kernel may access %d%s", b.size, p.MinBytes(rows, split), rowsNote(p, rows, split))
			case p.Align > 1 && b.ptr%uint64(p.Align) != 0:
				return bad("buffer address %#x is not %d-byte aligned", b.ptr, p.Align)
			}
			continue
		}
		if a.kind == "ptr" {
			return bad("kernel takes scalar %s, got a pointer", p.Kind)
		}
		if a.kind != p.Kind {
			return bad("kernel takes %s, got %v", p.Kind, a)
		}
		if p.Align > 1 {
			var rem int64
			switch a.kind {
			case "i32":
				rem = int64(int32(uint32(a.bits))) % int64(p.Align)
			case "i64":
				rem = int64(a.bits) % int64(p.Align)
			case "u32", "u64":
				rem = int64(a.bits % uint64(p.Align))
			}
			if rem != 0 {
				return bad("value %v must be a multiple of %d", a, p.Align)
			}
		}
	}
	return checkStrides(k, args)
}

// checkStrides bounds the stride arguments of every strided pointer by its buffer
// (ptx.KParam.CheckStrides): no negative stride, none that reads rows over each
// other, and a buffer that holds the farthest element the strides reach. CheckArgs
// has checked the kinds.
func checkStrides(k *ptx.Kernel, args []Arg) error {
	value := func(name string) int64 {
		for i, p := range k.Params {
			if p.Name == name {
				return args[i].Int()
			}
		}
		return 0
	}
	for i, p := range k.Params {
		if p.Run == 0 {
			continue
		}
		need, err := p.CheckStrides(value)
		bad := func(msg string) error { return &ArgError{Kernel: k.Name, Index: i, Name: p.Name, Msg: msg} }
		if err != nil {
			return bad(err.Error())
		}
		if b := args[i].buf; need > b.size {
			return bad(fmt.Sprintf("buffer is %d bytes, the strides reach %d (%s)", b.size, need, stridesNote(p, value)))
		}
	}
	return nil
}

func stridesNote(p ptx.KParam, value func(string) int64) string {
	var parts []string
	for _, d := range p.Strides {
		parts = append(parts, fmt.Sprintf("%s = %d", d.Stride, value(d.Stride)))
		if d.CountParam != "" {
			parts = append(parts, fmt.Sprintf("%s = %d", d.CountParam, value(d.CountParam)))
		}
	}
	return fmt.Sprintf("%s, %d %s elements each", strings.Join(parts, ", "), p.Run, p.Elem)
}

// Int is an integer scalar's value (sign-extended for i32 and i64), 0 for other
// arguments.
func (a Arg) Int() int64 {
	switch a.kind {
	case "i32":
		return int64(int32(uint32(a.bits)))
	case "u32", "i64", "u64":
		return int64(a.bits)
	}
	return 0
}

// Rows is the rows argument of a kernel whose grid is bound to it, checked against
// the capacity: 0..k.MaxRows(). It is 0 for a kernel with a fixed grid.
func Rows(k *ptx.Kernel, args []Arg) (int, error) {
	i := k.RowsParam()
	if i < 0 || i >= len(args) {
		return 0, nil
	}
	a, p := args[i], k.Params[i]
	if a.kind != "i32" {
		return 0, &ArgError{Kernel: k.Name, Index: i, Name: p.Name, Msg: fmt.Sprintf("kernel takes the rows of the call as i32, got %v", a)}
	}
	rows := int(int32(uint32(a.bits)))
	if rows < 0 || rows > k.MaxRows() {
		return 0, &ArgError{Kernel: k.Name, Index: i, Name: p.Name, Msg: fmt.Sprintf("%d rows, want 0..%d (the capacity the kernel was generated for, -max-tokens %d)", rows, k.MaxRows(), k.MaxRows())}
	}
	return rows, nil
}

// Split is the split argument of a kernel that has one, checked against 1..MaxSplit;
// 1 for a kernel without one.
func Split(k *ptx.Kernel, args []Arg) (int, error) {
	i := k.SplitParamIndex()
	if i < 0 || i >= len(args) {
		return 1, nil
	}
	a := args[i]
	if a.kind != "i32" {
		return 0, &ArgError{Kernel: k.Name, Index: i, Name: k.Params[i].Name, Msg: fmt.Sprintf("kernel takes the split as i32, got %v", a)}
	}
	split := int(int32(uint32(a.bits)))
	if split < 1 || split > k.MaxSplit() {
		return 0, &ArgError{Kernel: k.Name, Index: i, Name: k.Params[i].Name, Msg: fmt.Sprintf("split %d, want 1..%d", split, k.MaxSplit())}
	}
	return split, nil
}

// LaunchGrid is the grid of a launch with args: the kernel's own grid, with the
// dimensions bound to the rows and the split set to those arguments. A zero extent
// means the launch does nothing.
func LaunchGrid(k *ptx.Kernel, args []Arg) ([3]int, error) {
	rows, err := Rows(k, args)
	if err != nil {
		return [3]int{}, err
	}
	split, err := Split(k, args)
	if err != nil {
		return [3]int{}, err
	}
	return k.GridFor(rows, split), nil
}

func rowsNote(p ptx.KParam, rows, split int) string {
	switch {
	case p.PerPart != 0:
		return fmt.Sprintf(" (%d + %d per row + %d per row and chunk, %d rows, split %d)", p.Bytes, p.PerRow, p.PerPart, rows, split)
	case p.PerRow != 0:
		return fmt.Sprintf(" (%d + %d per row, %d rows)", p.Bytes, p.PerRow, rows)
	}
	return ""
}

func paramList(ps []ptx.KParam) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += p.Name + " " + p.Kind
	}
	return s
}

// marshal lays the arguments out the way gorgonia.org/cu's Function.Launch needs them.
// Launch copies exactly 8 bytes through each parameter pointer into its own array, and the
// driver then copies the parameter's declared size from the start of each 8-byte slot. So
// every argument gets a uint64 slot: a 32-bit scalar sits zero-extended in the low half,
// which is where a little-endian reader of 4 bytes finds it. (Passing a pointer to a Go
// int32 instead would make cu read 4 bytes past the variable.)
func marshal(args []Arg) []uint64 {
	slots := make([]uint64, len(args))
	for i, a := range args {
		if a.kind == "ptr" {
			slots[i] = a.buf.ptr
		} else {
			slots[i] = a.bits
		}
	}
	return slots
}

// maxBlock is the CUDA limit on threads per block on every architecture ptxgen targets.
const maxBlock = 1024

// CheckFacts validates a kernel's launch facts before any driver call, so a generator bug
// shows up as a readable error instead of CUDA_ERROR_INVALID_VALUE: positive grid and
// block, known parameter kinds, and (when the PTX module is attached) an entry of that
// name whose parameters have the sizes the kinds say, because the driver copies each
// parameter by its declared size.
func CheckFacts(k *ptx.Kernel) error {
	if k == nil {
		return fmt.Errorf("runtime: nil kernel")
	}
	fail := func(format string, v ...any) error {
		return fmt.Errorf("runtime: kernel %s: %s", k.Name, fmt.Sprintf(format, v...))
	}
	if k.Name == "" {
		return fmt.Errorf("runtime: kernel has no entry name")
	}
	for i, g := range k.Grid {
		if g <= 0 || g > target.MaxGrid[i] {
			return fail("grid dimension %d is %d, want 1..%d (CUDA's limit)", i, g, target.MaxGrid[i])
		}
	}
	if k.Block <= 0 || k.Block > maxBlock {
		return fail("block of %d threads, want 1..%d", k.Block, maxBlock)
	}
	if k.SharedBytes < 0 {
		return fail("negative shared memory %d", k.SharedBytes)
	}
	for _, p := range k.Params {
		if _, ok := kindBytes[p.Kind]; !ok {
			return fail("parameter %s has unknown kind %q", p.Name, p.Kind)
		}
		if p.Align < 0 || p.Bytes < 0 || p.PerRow < 0 || p.PerPart < 0 {
			return fail("parameter %s has negative Align, Bytes, PerRow or PerPart", p.Name)
		}
	}
	if rows := k.RowsParam(); rows >= 0 {
		if p := k.Params[rows]; p.Kind != "i32" {
			return fail("grid bound to parameter %s of kind %s, want i32", p.Name, p.Kind)
		}
		for _, n := range k.GridParam {
			if s := k.SplitParamIndex(); n != "" && n != k.Params[rows].Name && (s < 0 || k.Params[s].Name != n) {
				return fail("grid bound to parameters %s and %s, want the rows and at most one i32 split", k.Params[rows].Name, n)
			}
		}
	} else if k.GridParam != [3]string{} {
		return fail("grid bound to %q, which is not a parameter", k.GridParam)
	}
	if k.Module == nil {
		return nil
	}
	var fn *ptx.Func
	for _, f := range k.Module.Funcs {
		if f.Name == k.Name {
			fn = f
		}
	}
	if fn == nil {
		return fail("module has no entry %s", k.Name)
	}
	if fn.ReqNTid > 0 && fn.ReqNTid != k.Block {
		return fail(".reqntid %d but launch block is %d", fn.ReqNTid, k.Block)
	}
	if len(fn.Params) != len(k.Params) {
		return fail("PTX entry has %d parameters, launch facts list %d", len(fn.Params), len(k.Params))
	}
	for i, p := range fn.Params {
		want := kindBytes[k.Params[i].Kind]
		if got := ptxTypeBytes(p.Type); got != want {
			return fail("parameter %d (%s) is .%s in PTX (%d bytes) but kind %s (%d bytes)", i, p.Name, p.Type, got, k.Params[i].Kind, want)
		}
	}
	if k.Programmatic && !waitsForGrid(fn) {
		return fail("marked Programmatic but its PTX does not execute griddepcontrol.wait before touching memory: launched early it could read what the kernel before it has not written yet")
	}
	return nil
}

// waitsForGrid reports whether fn's first instruction that is not a parameter load or
// griddepcontrol.launch_dependents is griddepcontrol.wait, i.e. nothing can touch memory
// before the previous kernel in the stream is done.
func waitsForGrid(fn *ptx.Func) bool {
	for _, s := range fn.Body {
		in, ok := s.(*ptx.Instr)
		if !ok {
			continue
		}
		switch {
		case in.Op == "griddepcontrol.wait":
			return true
		case in.Op == "griddepcontrol.launch_dependents", strings.HasPrefix(in.Op, "ld.param."):
			continue
		}
		return false
	}
	return false
}

// ptxTypeBytes is the size of a PTX scalar parameter type, 0 for anything else.
func ptxTypeBytes(t ptx.Type) int {
	switch t {
	case "u32", "s32", "b32", "f32":
		return 4
	case "u64", "s64", "b64", "f64":
		return 8
	}
	return 0
}
