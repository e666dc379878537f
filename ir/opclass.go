package ir

// OpClass is what the passes need to know about an op kind without looking at
// its particular semantics: the verifier takes operand counts from it, legalize,
// layout and the emitter the elementwise ops, the emitter's simplification the
// commutative ones.
type OpClass struct {
	// Arity is the number of operands, -1 where it varies (load, store, for).
	Arity int
	// Elementwise ops compute each result element from the operands' elements at
	// the same coordinates (a scalar operand broadcasts).
	Elementwise bool
	// Binary ops are the elementwise arithmetic, logic and shift ops on two
	// operands of one element type.
	Binary bool
	// Commutative binary ops satisfy a op b == b op a.
	Commutative bool
}

var opClasses = map[OpKind]OpClass{
	OpProgramID: {Arity: 0},
	OpConst:     {Arity: 0},
	OpIota:      {Arity: 0},
	OpAdd:       {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpSub:       {Arity: 2, Elementwise: true, Binary: true},
	OpMul:       {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpDiv:       {Arity: 2, Elementwise: true, Binary: true},
	OpRem:       {Arity: 2, Elementwise: true, Binary: true},
	OpMax:       {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpMin:       {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpAnd:       {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpOr:        {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpXor:       {Arity: 2, Elementwise: true, Binary: true, Commutative: true},
	OpShl:       {Arity: 2, Elementwise: true, Binary: true},
	OpShr:       {Arity: 2, Elementwise: true, Binary: true},
	OpExp2:      {Arity: 1, Elementwise: true},
	OpLog2:      {Arity: 1, Elementwise: true},
	OpRcp:       {Arity: 1, Elementwise: true},
	OpSqrt:      {Arity: 1, Elementwise: true},
	OpRsqrt:     {Arity: 1, Elementwise: true},
	OpExp:       {Arity: 1, Elementwise: true},
	OpLog:       {Arity: 1, Elementwise: true},
	OpNeg:       {Arity: 1, Elementwise: true},
	OpCmp:       {Arity: 2, Elementwise: true},
	OpSelect:    {Arity: 3, Elementwise: true},
	OpCast:      {Arity: 1, Elementwise: true},
	OpBitcast:   {Arity: 1, Elementwise: true},
	OpBroadcast: {Arity: 1},
	OpReduce:    {Arity: 1},
	OpDot:       {Arity: 3},
	OpTrans:     {Arity: 1},
	OpColumn:    {Arity: 1},
	OpSlice:     {Arity: 2},
	OpLoad:      {Arity: -1},
	OpStore:     {Arity: -1},
	OpFor:       {Arity: -1},
}

// Class returns k's class; an unknown kind has arity -1 and no class.
func (k OpKind) Class() OpClass {
	if c, ok := opClasses[k]; ok {
		return c
	}
	return OpClass{Arity: -1}
}

// IsElementwise reports whether k is an elementwise op (see OpClass).
func (k OpKind) IsElementwise() bool { return k.Class().Elementwise }
