package emit

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

func (e *emitter) pushScope() {
	e.cache = append(e.cache, map[string]ptx.Operand{})
	e.coordScopes = append(e.coordScopes, map[[5]int]*coords{})
}

// forgetThreadCoords drops the cached coordinates and lane offsets that depend
// only on the thread, after a loop: recomputing them later costs a few integer
// instructions, while keeping them live across the loop cost the 64-head decode
// (128 registers) a spill.
func (e *emitter) forgetThreadCoords() {
	for _, m := range e.coordScopes {
		clear(m)
	}
	for _, m := range e.cache {
		for k := range m {
			if strings.HasPrefix(k, "lane:") {
				delete(m, k)
			}
		}
	}
}

func (e *emitter) popScope() {
	e.cache = e.cache[:len(e.cache)-1]
	e.coordScopes = e.coordScopes[:len(e.coordScopes)-1]
}

func (e *emitter) cached(key string) (ptx.Operand, bool) {
	for i := len(e.cache) - 1; i >= 0; i-- {
		if x, ok := e.cache[i][key]; ok {
			return x, true
		}
	}
	return nil, false
}

func operandKey(xs []ptx.Operand) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = ptx.OperandString(x)
	}
	return strings.Join(s, ",")
}

// at recomputes the element of v at the given coordinates (i32 registers or
// immediates, one per dimension of v). Results are cached for the open scope.
func (e *emitter) at(v *ir.Value, idx []ptx.Operand) (ptx.Operand, error) {
	if v.Type.Kind != ir.Tile {
		return e.scalar(v), nil
	}
	key := v.Name + "@" + operandKey(idx)
	if x, ok := e.cached(key); ok {
		return x, nil
	}
	if e.stagedDone[v] {
		x, err := e.sharedElem(v, idx)
		if err == nil {
			e.cache[len(e.cache)-1][key] = x
		}
		return x, err
	}
	x, err := e.atUncached(v, idx)
	if err != nil {
		return nil, err
	}
	e.cache[len(e.cache)-1][key] = x
	return x, nil
}

func (e *emitter) atUncached(v *ir.Value, idx []ptx.Operand) (ptx.Operand, error) {
	l := e.layout(v)
	o := v.Def
	switch {
	case l.Kind == decision.Shared:
		return e.sharedElem(v, idx)
	case l.Kind != decision.Expr:
		return nil, fmt.Errorf("%s (%v) cannot be read at arbitrary coordinates", v, l)
	case o == nil:
		return nil, fmt.Errorf("%s has no defining op", v)
	}
	switch o.Kind {
	case ir.OpIota:
		return idx[0], nil
	case ir.OpBroadcast:
		x := o.Args[0]
		if x.Type.Kind != ir.Tile {
			return e.scalar(x), nil
		}
		return e.at(x, []ptx.Operand{idx[1-o.Int]})
	case ir.OpColumn:
		return e.at(o.Args[0], []ptx.Operand{idx[0], ptx.Imm(o.Int)})
	case ir.OpTrans:
		return e.at(o.Args[0], []ptx.Operand{idx[1], idx[0]})
	case ir.OpSlice:
		i, err := e.binary(ir.OpAdd, ir.I32, e.scalar(o.Args[1]), idx[0])
		if err != nil {
			return nil, err
		}
		return e.at(o.Args[0], []ptx.Operand{i})
	case ir.OpLoad:
		m := ir.MemOperands(o)
		off, err := e.at(m.Offs, idx)
		if err != nil {
			return nil, err
		}
		args := []ptx.Operand{e.scalar(m.Ptr), off, nil}
		if m.Mask != nil {
			if args[2], err = e.at(m.Mask, idx); err != nil {
				return nil, err
			}
		}
		return e.loadElem(o, args)
	}
	args := make([]ptx.Operand, len(o.Args))
	for i, a := range o.Args {
		var err error
		if args[i], err = e.at(a, idx); err != nil {
			return nil, err
		}
	}
	return e.elem(o, args)
}
