package emu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ptx"
)

type execFn = func(w *warp, mask uint32) error

// mods is an opcode split at its dots. Decoders take the modifiers they know; any
// left over is an error, so an unsupported modifier is never silently ignored.
type mods struct {
	base string
	list []string
	used []bool
}

func splitOp(op string) *mods {
	parts := strings.Split(op, ".")
	return &mods{base: parts[0], list: parts[1:], used: make([]bool, len(parts)-1)}
}

// has takes modifier s if present.
func (m *mods) has(s string) bool {
	for i, x := range m.list {
		if !m.used[i] && x == s {
			m.used[i] = true
			return true
		}
	}
	return false
}

// one takes the first of opts present, "" if none.
func (m *mods) one(opts ...string) string {
	for i, x := range m.list {
		if m.used[i] {
			continue
		}
		for _, o := range opts {
			if x == o {
				m.used[i] = true
				return x
			}
		}
	}
	return ""
}

var typeNames = map[string]bool{
	"b8": true, "b16": true, "b32": true, "b64": true, "u8": true, "u16": true, "u32": true, "u64": true,
	"s8": true, "s16": true, "s32": true, "s64": true, "f16": true, "f16x2": true, "bf16": true, "bf16x2": true,
	"f32": true, "f64": true, "pred": true, "e4m3": true, "e5m2": true, "e4m3x2": true, "e5m2x2": true, "tf32": true,
}

// types takes every remaining type modifier, in order.
func (m *mods) types() []string {
	var t []string
	for i, x := range m.list {
		if !m.used[i] && typeNames[x] {
			m.used[i] = true
			t = append(t, x)
		}
	}
	return t
}

// typ takes exactly one type modifier.
func (m *mods) typ() (string, error) {
	t := m.types()
	if len(t) != 1 {
		return "", fmt.Errorf("want one type modifier, have %v", t)
	}
	return t[0], nil
}

func (m *mods) rest() error {
	var left []string
	for i, x := range m.list {
		if !m.used[i] {
			left = append(left, "."+x)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("unsupported modifier %s", strings.Join(left, ""))
	}
	return nil
}

// errNoForm is nargs's error for an opcode ptx.Forms lacks: decode reports it as
// an unknown instruction, or as the modifier the decoder did not take.
var errNoForm = errors.New("no form in ptx.Forms")

// nargs checks in's operand count against its form in ptx.Forms (hand-written forms
// included), the one table of what the emulator decodes. The decoders index the
// operands only after this check.
func nargs(in *ptx.Instr) error {
	f := ptx.FormOf(in.Op)
	if f == nil {
		return errNoForm
	}
	if f.CheckOperandCount(in) != nil {
		return fmt.Errorf("wrong number of operands (%d)", len(in.Args))
	}
	return nil
}

// writes reports whether in, which nargs has checked, writes its operand i (its
// form's = marks).
func writes(in *ptx.Instr, i int) bool {
	ops := ptx.FormOf(in.Op).Operands()
	return i < len(ops) && ops[i].Written
}

// decode builds the executable form of one instruction.
func (d *decoder) decode(in *instr) (execFn, error) {
	src := in.src
	m := splitOp(src.Op)
	var f execFn
	var err error
	switch m.base {
	case "mov":
		f, err = d.mov(in, m)
	case "add", "sub", "mul", "mad", "div", "rem", "min", "max", "neg", "abs", "fma",
		"and", "or", "xor", "not", "shl", "shr", "popc", "clz", "brev", "prmt",
		"ex2", "lg2", "rcp", "sqrt", "rsqrt", "sin", "cos", "tanh", "copysign":
		f, err = d.alu(in, m)
	case "setp":
		f, err = d.setp(in, m)
	case "selp":
		f, err = d.selp(in, m)
	case "cvt":
		f, err = d.cvt(in, m)
	case "cvta":
		f, err = d.cvta(in, m)
	case "ld", "st":
		f, err = d.ldst(in, m)
	case "cp":
		f, err = d.cpAsync(in, m)
	case "ldmatrix", "stmatrix":
		f, err = d.ldmatrix(in, m)
	case "mma":
		f, err = d.mma(in, m)
	case "movmatrix":
		f, err = d.movmatrix(in, m)
	case "shfl":
		f, err = d.shfl(in, m)
	case "bar", "barrier":
		f, err = d.bar(in, m)
	case "membar", "fence", "griddepcontrol", "setmaxnreg":
		// Orderings are no-ops: one CTA runs at a time, and the kernels of a program
		// run one after another, so a grid dependency is always already met. A
		// register budget changes no value (the emulator's registers are unbounded).
		m.list, m.used = nil, nil
		if err = nargs(src); err == nil {
			f = func(*warp, uint32) error { return nil }
		}
	case "bra":
		f, err = d.bra(in, m)
	case "ret", "exit":
		if err = nargs(src); err == nil {
			f = func(w *warp, mask uint32) error {
				w.active &^= mask
				if w.active == 0 {
					w.state = exited
				}
				return nil
			}
		}
	default:
		return nil, fmt.Errorf("unknown instruction %s", src.Op)
	}
	if err == errNoForm {
		// A modifier the decoder left says more than the missing form.
		if rest := m.rest(); rest != nil {
			return nil, rest
		}
		return nil, fmt.Errorf("unknown instruction %s (%v)", src.Op, err)
	}
	if err != nil {
		return nil, err
	}
	if err := m.rest(); err != nil {
		return nil, err
	}
	return f, nil
}

func (d *decoder) bra(in *instr, m *mods) (execFn, error) {
	uni := m.has("uni")
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	s, ok := in.src.Args[0].(ptx.Sym)
	if !ok {
		return nil, fmt.Errorf("branch target must be a label")
	}
	target, ok := d.labels[string(s)]
	if !ok {
		return nil, fmt.Errorf("undefined label %s", s)
	}
	what := "divergent branch (the emulator requires warp-uniform control flow)"
	if uni {
		what = "bra.uni is not uniform"
	}
	return func(w *warp, mask uint32) error {
		if mask != w.active {
			return w.uniform(in, mask, what)
		}
		w.pc = target
		return nil
	}, nil
}
