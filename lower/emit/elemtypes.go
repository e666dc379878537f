package emit

import (
	"math/bits"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// elemPTX is how one IR element type appears in PTX: every choice of register
// file, type suffix and parameter type that depends on the element type is read
// from elemTypes.
type elemPTX struct {
	reg     string   // register file prefix (u8 and e4m3 are widened to 32 bits)
	compute ptx.Type // suffix of arithmetic, comparisons and negation
	bits    ptx.Type // suffix of moves and selects
	mem     ptx.Type // suffix of scalar loads and stores
	// param and paramKind are the .param type and the launch-fact kind of a
	// scalar kernel parameter ("" where the element type cannot be one).
	param     ptx.Type
	paramKind string
}

var elemTypes = [...]elemPTX{
	ir.Invalid: {reg: "%r", compute: "b32", bits: "b32", mem: "b32"},
	ir.I1:      {reg: "%p", compute: "pred", bits: "pred", mem: "b32"},
	ir.U8:      {reg: "%r", compute: "s32", bits: "b32", mem: "u8"},
	ir.I32:     {reg: "%r", compute: "s32", bits: "b32", mem: "s32", param: "s32", paramKind: "i32"},
	ir.I64:     {reg: "%rd", compute: "s64", bits: "b64", mem: "s64", param: "s64", paramKind: "i64"},
	ir.E4M3:    {reg: "%r", compute: "b16", bits: "b32", mem: "u8"},
	ir.BF16:    {reg: "%h", compute: "b16", bits: "b16", mem: "b16"},
	ir.F16:     {reg: "%h", compute: "b16", bits: "b16", mem: "b16"},
	ir.F32:     {reg: "%f", compute: "f32", bits: "f32", mem: "f32", param: "f32", paramKind: "f32"},
}

func elemType(e ir.Elem) elemPTX {
	if int(e) < len(elemTypes) {
		return elemTypes[e]
	}
	return elemTypes[ir.Invalid]
}

func regPrefix(e ir.Elem) string { return elemType(e).reg }

// typeSuffix is the PTX type an op on elem computes in.
func typeSuffix(e ir.Elem) ptx.Type { return elemType(e).compute }

func bitsSuffix(e ir.Elem) ptx.Type { return elemType(e).bits }

func memSuffix(e ir.Elem) ptx.Type { return elemType(e).mem }

// log2 is the exponent of a power of two.
func log2(n int) int { return bits.TrailingZeros(uint(n)) }
