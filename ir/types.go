// Package ir is ptxgen's tile IR: kernels over tile values with static logical shapes
// of any size. A kernel is a list of SSA ops in blocks; tiles are rank 1 or 2, and the
// lowering (package lower) decides where each tile lives (registers in an mma fragment
// layout, shared memory, or recomputed per element) and how it is padded.
package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Elem is an element type.
type Elem uint8

// Element types. I1 is a predicate (the result of comparisons).
const (
	Invalid Elem = iota
	I1
	U8
	I32
	I64
	E4M3
	BF16
	F16
	F32
)

var elemNames = [...]string{Invalid: "invalid", I1: "i1", U8: "u8", I32: "i32", I64: "i64", E4M3: "e4m3", BF16: "bf16", F16: "f16", F32: "f32"}

func (e Elem) String() string {
	if int(e) < len(elemNames) {
		return elemNames[e]
	}
	return fmt.Sprintf("elem(%d)", uint8(e))
}

// ParseElem parses an element type name.
func ParseElem(s string) (Elem, bool) {
	for i, n := range elemNames {
		if n == s && Elem(i) != Invalid {
			return Elem(i), true
		}
	}
	return Invalid, false
}

// Size returns the size of one element in bytes (I1 counts as 1).
func (e Elem) Size() int {
	switch e {
	case I1, U8, E4M3:
		return 1
	case BF16, F16:
		return 2
	case I32, F32:
		return 4
	case I64:
		return 8
	}
	return 0
}

// IsFloat reports whether e is a floating-point type.
func (e Elem) IsFloat() bool { return e == E4M3 || e == BF16 || e == F16 || e == F32 }

// IsInt reports whether e is an integer type (not I1).
func (e Elem) IsInt() bool { return e == U8 || e == I32 || e == I64 }

// Kind says whether a type is a scalar, a tile or a pointer.
type Kind uint8

// Type kinds.
const (
	Scalar Kind = iota
	Tile
	Ptr
)

// Type is the type of a value: a scalar, a tile of static shape, or a pointer to
// global memory (kernel parameters only).
type Type struct {
	Kind  Kind
	Elem  Elem
	Shape []int // tiles only: rank 1 or 2, every extent >= 1
}

// ScalarOf returns the scalar type of e.
func ScalarOf(e Elem) Type { return Type{Kind: Scalar, Elem: e} }

// TileOf returns a tile type.
func TileOf(e Elem, shape ...int) Type {
	return Type{Kind: Tile, Elem: e, Shape: append([]int(nil), shape...)}
}

// PtrTo returns a pointer type.
func PtrTo(e Elem) Type { return Type{Kind: Ptr, Elem: e} }

// Rank is 0 for scalars and pointers.
func (t Type) Rank() int { return len(t.Shape) }

// WithElem returns t with another element type and the same shape.
func (t Type) WithElem(e Elem) Type {
	t.Elem = e
	t.Shape = append([]int(nil), t.Shape...)
	return t
}

// Equal reports type identity.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Elem != u.Elem || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	return true
}

// Elems is the number of elements of a tile (1 for scalars). It saturates at
// math.MaxInt rather than wrap, so a shape past the verifier's limit (MaxTileElems)
// never counts as small.
func (t Type) Elems() int {
	n := 1
	for _, d := range t.Shape {
		if d > 0 && n > math.MaxInt/d {
			return math.MaxInt
		}
		n *= d
	}
	return n
}

func (t Type) String() string {
	switch t.Kind {
	case Ptr:
		return "ptr<" + t.Elem.String() + ">"
	case Tile:
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = strconv.Itoa(d)
		}
		return "tile<" + strings.Join(dims, "x") + "x" + t.Elem.String() + ">"
	}
	return t.Elem.String()
}

// ParseType parses the text form of a type ("i32", "ptr<bf16>", "tile<64x16xbf16>").
func ParseType(s string) (Type, error) {
	switch {
	case strings.HasPrefix(s, "ptr<") && strings.HasSuffix(s, ">"):
		e, ok := ParseElem(s[4 : len(s)-1])
		if !ok {
			return Type{}, fmt.Errorf("unknown element type in %q", s)
		}
		return PtrTo(e), nil
	case strings.HasPrefix(s, "tile<") && strings.HasSuffix(s, ">"):
		parts := strings.Split(s[5:len(s)-1], "x")
		if len(parts) < 2 || len(parts) > 3 {
			return Type{}, fmt.Errorf("tile type %q: want rank 1 or 2", s)
		}
		e, ok := ParseElem(parts[len(parts)-1])
		if !ok {
			return Type{}, fmt.Errorf("unknown element type in %q", s)
		}
		shape := make([]int, len(parts)-1)
		for i, p := range parts[:len(parts)-1] {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 {
				return Type{}, fmt.Errorf("tile type %q: extent %q is not a positive integer", s, p)
			}
			shape[i] = n
		}
		return TileOf(e, shape...), nil
	}
	e, ok := ParseElem(s)
	if !ok {
		return Type{}, fmt.Errorf("unknown type %q", s)
	}
	return ScalarOf(e), nil
}
