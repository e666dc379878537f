// Package ptx is the instruction model shared by the code generator (which builds and
// prints it) and the emulator (which parses the printed text back into it). Keeping one
// model for both directions means the two cannot drift: whatever the printer writes, the
// parser must read back into an identical Module.
package ptx

import (
	"fmt"
	"math"
	"math/big"
)

// Module is one PTX translation unit: a header and its kernels.
type Module struct {
	Version     string // ".version", e.g. "7.8"
	Target      string // ".target", e.g. "sm_90"
	AddressSize int    // ".address_size", always 64 for ptxgen
	Funcs       []*Func
}

// Func is one `.visible .entry` kernel.
type Func struct {
	Name    string
	Params  []Param
	ReqNTid int // .reqntid N, 1, 1: the block size the kernel was generated for
	// MaxNReg is the register budget per thread (.maxnreg), 0 for ptxas's choice.
	MaxNReg int

	// Regs declares virtual register files (".reg .b32 %r<40>;"). PTX registers are
	// virtual; ptxas allocates the physical ones, so the generator never reuses a name.
	Regs []RegDecl
	// Shared declares shared-memory symbols. ptxgen uses one dynamic (extern) array.
	Shared []SharedDecl
	Body   []Stmt
}

// Param is one kernel parameter. ptxgen only uses 32- and 64-bit scalars (pointers
// are .u64) because the CUDA driver copies each parameter by size.
type Param struct {
	Name string
	Type Type
}

// RegDecl declares Count registers named Prefix0..Prefix{Count-1}.
type RegDecl struct {
	Type   Type
	Prefix string // "%r", "%rd", "%f", "%p", "%h"
	Count  int
}

// SharedDecl declares a shared-memory array. Extern arrays have no size: their size
// is the dynamic shared memory given at launch.
type SharedDecl struct {
	Name   string
	Align  int
	Extern bool
	Size   int
}

// Type is a PTX fundamental type name without the leading dot ("u32", "f32", "pred").
type Type string

// Cmp is a comparison of setp ("lt", "eq").
type Cmp string

// Stmt is a statement in a function body: *Instr, *Label or *Comment.
type Stmt interface{ stmt() }

// Label marks a branch target.
type Label struct{ Name string }

// Comment is a line comment. The printer writes it as "// Text"; the parser keeps it
// so that the round trip is exact.
type Comment struct{ Text string }

// Instr is one instruction. Op is the full opcode with its modifiers joined by dots,
// exactly as PTX spells it ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32").
type Instr struct {
	Guard    string // predicate register guarding the instruction, "" for none
	GuardNeg bool   // guard is "@!p"
	Op       string
	Args     []Operand
}

func (*Instr) stmt()   {}
func (*Label) stmt()   {}
func (*Comment) stmt() {}

// Operand is one instruction operand.
type Operand interface{ operand() }

// Reg is a register or special register ("%r3", "%tid.x", "%laneid").
type Reg string

// Imm is an integer immediate.
type Imm int64

// FImm is a single-precision immediate held as its IEEE bits (so NaN payloads and -0
// survive a round trip), printed exactly as 0fXXXXXXXX.
type FImm uint32

// F32 returns the immediate for x.
func F32(x float32) FImm { return FImm(math.Float32bits(x)) }

// Sym names a parameter, a shared array or a label.
type Sym string

// Addr is a memory operand [Base+Off]; Base is a Reg or a Sym.
type Addr struct {
	Base Operand
	Off  int64
}

// Vec is a vector operand {a, b, ...}.
type Vec []Operand

// Sink is the "_" operand (a discarded result).
type Sink struct{}

func (Reg) operand()  {}
func (Imm) operand()  {}
func (FImm) operand() {}
func (Sym) operand()  {}
func (Addr) operand() {}
func (Vec) operand()  {}
func (Sink) operand() {}

// Kernel is a generated kernel: its PTX module plus what a launcher must know to run it.
// The runtime, the emulator and generated Go launchers all take launch facts from here,
// never from parsing comments.
type Kernel struct {
	Module *Module
	Name   string // entry name
	Grid   [3]int // CTAs per dimension (see GridParam)
	// GridParam binds grid dimensions to run-time values: where GridParam[d] names an
	// i32 parameter, a launch's extent in d is that argument's value and Grid[d] the
	// largest value a launcher accepts. The first bound dimension is the rows of the
	// call (0 launches nothing; its extent is the capacity); a dimension bound to
	// another parameter is the split (SplitParamIndex), the candidate chunks per row
	// of the launcher's plan.
	GridParam   [3]string
	Block       int      // threads per CTA (1-D blocks only)
	SharedBytes int      // dynamic shared memory per CTA
	Params      []KParam // in declaration order, one per Func parameter
	// Programmatic marks a kernel that may be launched while the kernel before it in
	// the stream is still running (programmatic dependent launch, sm_90 and later):
	// it executes griddepcontrol.wait before it touches memory, so launchers pass the
	// driver's programmatic-stream-serialization attribute and save the launch gap.
	Programmatic bool
}

// KParam describes one kernel parameter for launchers and argument checks.
type KParam struct {
	Name string
	// Kind is "ptr" for a device pointer or the scalar type ("i32", "i64", "f32").
	Kind string
	// Elem is the element type a pointer points to ("bf16", "f32", "i32", "u8", ...).
	Elem string
	// Bytes is the minimum buffer size in bytes a pointer must reach, 0 if unknown;
	// with PerRow, the part that does not depend on the rows of the call.
	Bytes int64
	// PerRow is what the minimum size grows by per row of the call: a pointer must
	// reach Bytes + PerRow*rows bytes (MinBytes), rows being the grid's parameter.
	PerRow int64
	// PerPart is what it grows by per (row, chunk) pair: PerPart*rows*split more bytes,
	// split being the kernel's split argument (SplitParamIndex).
	PerPart int64
	// Align is the alignment in bytes the pointer (or, for a scalar, the divisibility the
	// value) must have; the generated code relies on it.
	Align int
	// Written reports that the kernel stores through this pointer.
	Written bool
	// Run and Strides describe, for a pointer the kernel addresses through stride
	// arguments, what it may touch: Run contiguous elements at each position, the
	// positions stepping by each of Strides (inner first) over its count. Launchers
	// bound the strides and the buffer by them (CheckStrides). Run 0: no strides.
	Run     int64
	Strides []StrideDim
}

// StrideDim is one strided dimension of a pointer parameter: Count positions, Stride
// elements apart, Stride being the value of the named integer parameter. The count is
// Count, or where CountParam names an i32 parameter, that argument's value divided by
// CountDiv, rounded up (the rows of the call; a pool's pages from its slots).
type StrideDim struct {
	Stride     string
	Count      int64
	CountParam string
	CountDiv   int64
}

// ElemBytes is the size in bytes of an element type as KParam.Elem names it, 0 for
// an unknown one.
func ElemBytes(elem string) int64 {
	switch elem {
	case "i1", "u8", "e4m3":
		return 1
	case "bf16", "f16":
		return 2
	case "i32", "u32", "f32":
		return 4
	case "i64", "u64", "f64":
		return 8
	}
	return 0
}

// CheckStrides checks a pointer parameter's stride arguments against the buffer
// they address, for launchers: value(name) is the argument of the named integer
// parameter. Every stride must be >= 0 and, where its count is above 1, step past
// the positions inside it (for the innermost, Run elements), so no two rows overlap
// (0 or a negative stride would read one row for all, or before the buffer); the
// buffer must then hold the farthest element. It returns the bytes the kernel may
// touch (0 when a count is 0: nothing is read) or an error naming the stride.
func (p KParam) CheckStrides(value func(name string) int64) (int64, error) {
	if p.Run <= 0 {
		return 0, nil
	}
	if p.Run > math.MaxInt64/8 {
		return 0, fmt.Errorf("%s: a run of %d elements does not fit in memory", p.Name, p.Run)
	}
	span, empty := p.Run, false // elements from the first to one past the last touched
	inner := fmt.Sprintf("%d elements", p.Run)
	for _, d := range p.Strides {
		s := value(d.Stride)
		n := d.Count
		if d.CountParam != "" {
			v, div := value(d.CountParam), max(d.CountDiv, 1)
			n = 0
			if v > 0 {
				n = (v + div - 1) / div
			}
		}
		switch {
		case s < 0:
			return 0, fmt.Errorf("%s = %d: want at least 0 (a negative stride of %s reads before its buffer)", d.Stride, s, p.Name)
		case n > 1 && s < span:
			return 0, fmt.Errorf("%s = %d: want at least %d (each of the %d steps of %s covers %s; a smaller stride reads them over each other)", d.Stride, s, span, n, p.Name, inner)
		case n <= 0:
			empty = true
		case n > 1 && (s > math.MaxInt64/8/(n-1) || span > math.MaxInt64/8-(n-1)*s):
			return 0, fmt.Errorf("%s = %d: the %d steps of %s would reach past 2^60 elements", d.Stride, s, n, p.Name)
		}
		if n > 1 {
			span += (n - 1) * s
		}
		inner = fmt.Sprintf("%d elements (%s)", span, d.Stride)
	}
	if empty {
		return 0, nil
	}
	return span * max(ElemBytes(p.Elem), 1), nil
}

// RowsParam is the index of the parameter the grid is bound to, -1 when the grid is
// fixed.
func (k *Kernel) RowsParam() int {
	for _, n := range k.GridParam {
		if n == "" {
			continue
		}
		for i, p := range k.Params {
			if p.Name == n {
				return i
			}
		}
	}
	return -1
}

// splitName is the parameter a grid dimension after the rows is bound to: the split
// ("" without one). The binding marks it, not its name.
func (k *Kernel) splitName() string {
	rows := ""
	for _, n := range k.GridParam {
		switch {
		case n == "":
		case rows == "":
			rows = n
		case n != rows:
			return n
		}
	}
	return ""
}

// SplitParamIndex is the index of the kernel's split parameter, the i32 bound to a
// grid dimension after the rows; -1 without one.
func (k *Kernel) SplitParamIndex() int {
	n := k.splitName()
	for i, p := range k.Params {
		if n != "" && p.Name == n && p.Kind == "i32" {
			return i
		}
	}
	return -1
}

// MaxRows is the capacity: the largest rows a launch accepts (the extent of the first
// bound grid dimension), 0 when the grid is fixed.
func (k *Kernel) MaxRows() int {
	for d, n := range k.GridParam {
		if n != "" {
			return k.Grid[d]
		}
	}
	return 0
}

// MaxSplit is the largest split a launch accepts: the extent of the grid dimension
// bound to the split, or the most any int32 may be without one.
func (k *Kernel) MaxSplit() int {
	if s := k.splitName(); s != "" {
		for d, n := range k.GridParam {
			if n == s {
				return k.Grid[d]
			}
		}
	}
	return 1<<31 - 1
}

// GridFor is the grid of a launch with the given rows and split: the dimension bound
// to the split is split, the other bound dimension rows, the rest as generated.
func (k *Kernel) GridFor(rows, split int) [3]int {
	g, s := k.Grid, k.splitName()
	for d, n := range k.GridParam {
		switch n {
		case "":
		case s:
			g[d] = split
		default:
			g[d] = rows
		}
	}
	return g
}

// MinBytes is the least size in bytes a pointer argument must have for a launch with
// the given rows and split. A size past math.MaxInt64 saturates there, which no
// buffer has, instead of wrapping to a small one.
func (p KParam) MinBytes(rows, split int) int64 {
	r := big.NewInt(int64(rows))
	n := new(big.Int).Mul(big.NewInt(p.PerPart), r)
	n.Mul(n, big.NewInt(int64(split)))
	n.Add(n, new(big.Int).Mul(big.NewInt(p.PerRow), r))
	n.Add(n, big.NewInt(p.Bytes))
	if !n.IsInt64() {
		if n.Sign() < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return n.Int64()
}

// OperandString renders an operand as PTX.
func OperandString(o Operand) string {
	switch v := o.(type) {
	case Reg:
		return string(v)
	case Imm:
		return fmt.Sprint(int64(v))
	case FImm:
		return fmt.Sprintf("0f%08X", uint32(v))
	case Sym:
		return string(v)
	case Addr:
		if v.Off == 0 {
			return "[" + OperandString(v.Base) + "]"
		}
		return fmt.Sprintf("[%s+%d]", OperandString(v.Base), v.Off)
	case Vec:
		s := "{"
		for i, e := range v {
			if i > 0 {
				s += ", "
			}
			s += OperandString(e)
		}
		return s + "}"
	case Sink:
		return "_"
	}
	panic(fmt.Sprintf("ptx: unknown operand %T", o))
}
