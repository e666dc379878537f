package ptx

import (
	"fmt"
	"strings"

	arch "github.com/ptxgen/ptxgen/target"
)

// Form is one family of instructions in Forms.
type Form struct {
	Op     string
	Args   string
	Needs  Features
	MinPTX int
	PTXOn  map[string]int
	// Optional is how many trailing operands of Args may be left out.
	Optional int
	// Check, if set, checks what the operand kinds cannot say (vector lengths,
	// immediate values).
	Check func(*Instr) error
	// HandWritten marks a form only hand-written PTX uses (emu's tests,
	// scripts/proto): the emulator decodes it, as every form, but ptxgen never emits
	// it, so Validate refuses it and genforms writes no constructor for it.
	HandWritten bool
	// HandWrittenOptional is how many more trailing operands only hand-written PTX
	// leaves out (cp.async's src-size): the emulator decodes the shorter instruction,
	// Validate refuses it as a hand-written form.
	HandWrittenOptional int
}

// Features is a set of target capabilities: those a form needs (Form.Needs) and
// those a target has (TargetFeatures).
type Features uint8

const (
	SM75 Features = 1 << iota // ldmatrix, movmatrix (sm_75 and later)
	SM80                      // cp.async, bf16 conversions and fma, bf16 and f16 mma.sync (sm_80 and later)
	SM89                      // e4m3 conversions (sm_89 and later)
	SM90                      // griddepcontrol, mul.rn.bf16x2 (sm_90 and later)
	// ArchSpecific is code for one exact chip, an 'a' target (sm_90a, sm_120a): with
	// SM90, setmaxnreg.
	ArchSpecific
)

// smFeatures are the features a compute capability brings, oldest first.
var smFeatures = []struct {
	f  Features
	sm int
}{{SM75, 75}, {SM80, 80}, {SM89, 89}, {SM90, 90}}

// TargetFeatures is what target id has: every SM feature up to its compute
// capability, and ArchSpecific for an 'a' target.
func TargetFeatures(id arch.ID) Features {
	var f Features
	for _, s := range smFeatures {
		if id.SM >= s.sm {
			f |= s.f
		}
	}
	if id.Suffix == 'a' {
		f |= ArchSpecific
	}
	return f
}

// String names the targets that have every feature of f: "sm_90 or later",
// "sm_90a or another architecture-specific target of sm_90 or later".
func (f Features) String() string {
	sm := 0
	for _, s := range smFeatures {
		if f&s.f != 0 {
			sm = s.sm
		}
	}
	switch {
	case f&ArchSpecific != 0 && sm > 0:
		return fmt.Sprintf("sm_%da or another architecture-specific target of sm_%d or later", sm, sm)
	case f&ArchSpecific != 0:
		return "an architecture-specific target (sm_90a)"
	case sm > 0:
		return fmt.Sprintf("sm_%d or later", sm)
	}
	return "any target"
}

// FormOperand is one operand of a form: the kinds it may be (Form.Args) and whether the
// instruction writes it.
type FormOperand struct {
	Kinds   string
	Written bool
}

// Operands parses f.Args.
func (f Form) Operands() []FormOperand {
	var out []FormOperand
	for _, a := range strings.Fields(f.Args) {
		k, w := strings.CutPrefix(a, "=")
		out = append(out, FormOperand{Kinds: k, Written: w})
	}
	return out
}

// FormOf is the form of the exact opcode op, nil when op is not in Forms
// (hand-written forms included).
func FormOf(op string) *Form { return forms[op] }

// CheckOperandCount checks that in has as many operands as its form takes,
// hand-written PTX's shorter instruction included (in.Op must have a form).
func (f *Form) CheckOperandCount(in *Instr) error {
	n, max := len(in.Args), len(f.Operands())
	min := max - f.Optional - f.HandWrittenOptional
	if n <= max && n >= min {
		return nil
	}
	want := fmt.Sprint(max)
	if min < max {
		want = fmt.Sprintf("%d to %d", min, max)
	}
	return fmt.Errorf("%d operands, want %s", n, want)
}

// forms maps each exact opcode to its form, expanded from Forms once.
var forms = func() map[string]*Form {
	m := map[string]*Form{}
	for i := range Forms {
		f := &Forms[i]
		for _, op := range expand(f.Op) {
			if m[op] != nil {
				panic("ptx: opcode " + op + " has two forms")
			}
			m[op] = f
		}
	}
	return m
}()

// Opcodes spells out every opcode f stands for.
func (f Form) Opcodes() []string { return expand(f.Op) }

// expand spells out every opcode a pattern with {a|b} alternatives stands for.
func expand(p string) []string {
	i := strings.IndexByte(p, '{')
	if i < 0 {
		return []string{p}
	}
	j := i + strings.IndexByte(p[i:], '}')
	var out []string
	for _, alt := range strings.Split(p[i+1:j], "|") {
		for _, rest := range expand(p[j+1:]) {
			out = append(out, p[:i]+alt+rest)
		}
	}
	return out
}

// Validate checks one instruction of a module for target ("sm_90") at PTX
// version ("7.8"): its opcode is a known form, it has the operands the form
// takes, of the kinds it takes, and the target and version support it. The error
// names the instruction and what is wrong.
func Validate(in *Instr, target, version string) error {
	f := forms[in.Op]
	if f == nil {
		return fmt.Errorf("ptx: %s: unknown opcode %q (not in ptx.Forms)", instrString(in), in.Op)
	}
	if err := f.CheckOperandCount(in); err != nil {
		return fmt.Errorf("ptx: %s: %v", instrString(in), err)
	}
	ops := f.Operands()
	if f.HandWritten || len(in.Args) < len(ops)-f.Optional {
		return fmt.Errorf("ptx: %s: a hand-written form of ptx.Forms (the emulator runs it; ptxgen never emits it)", instrString(in))
	}
	for i, a := range in.Args {
		if k := operandKind(a); !strings.ContainsRune(ops[i].Kinds, k) {
			return fmt.Errorf("ptx: %s: operand %d is %s, want %s", instrString(in), i, kindName(k), kindNames(ops[i].Kinds))
		}
	}
	id, err := arch.ParseID(target)
	if err != nil {
		return fmt.Errorf("ptx: %v", err)
	}
	if missing := f.Needs &^ TargetFeatures(id); missing != 0 {
		return fmt.Errorf("ptx: %s needs %s (target %s)", instrString(in), f.Needs, target)
	}
	need, _ := MinVersion(in.Op, target)
	if v, err := ParseVersion(version); err != nil {
		return err
	} else if v < need {
		return fmt.Errorf("ptx: %s needs PTX %d.%d on %s (module is %s)", in.Op, need/10, need%10, target, version)
	}
	if f.Check != nil {
		if err := f.Check(in); err != nil {
			return fmt.Errorf("ptx: %s: %v", instrString(in), err)
		}
	}
	return nil
}

// MinVersion is the PTX ISA version (major*10+minor) that opcode op needs on
// target, from Forms; false when op is not a form ptxgen emits.
func MinVersion(op, target string) (int, bool) {
	f := forms[op]
	if f == nil || f.HandWritten {
		return 0, false
	}
	if v, ok := f.PTXOn[target]; ok {
		return v, true
	}
	return f.MinPTX, true
}

// ValidateModule validates every instruction of m and returns the first error.
func ValidateModule(m *Module) error {
	for _, fn := range m.Funcs {
		for _, s := range fn.Body {
			if in, ok := s.(*Instr); ok {
				if err := Validate(in, m.Target, m.Version); err != nil {
					return fmt.Errorf("%s: %w", fn.Name, err)
				}
			}
		}
	}
	return nil
}

func operandKind(a Operand) rune {
	switch a.(type) {
	case Reg:
		return 'r'
	case Imm:
		return 'i'
	case FImm:
		return 'f'
	case Addr:
		return 'a'
	case Vec:
		return 'v'
	case Sym:
		return 's'
	}
	return '?'
}

var kindWords = map[rune]string{'r': "a register", 'i': "an integer immediate", 'f': "a float immediate", 'a': "an address", 'v': "a vector", 's': "a symbol", '?': "a sink"}

func kindName(k rune) string { return kindWords[k] }

func kindNames(ks string) string {
	var s []string
	for _, k := range ks {
		s = append(s, kindWords[k])
	}
	return strings.Join(s, " or ")
}

func instrString(in *Instr) string {
	var args []string
	for _, a := range in.Args {
		args = append(args, OperandString(a))
	}
	return strings.TrimSpace(in.Op + " " + strings.Join(args, ", "))
}

// ParseVersion parses a PTX ISA version "M.m" as M*10+m (7.8 = 78), the form
// target.Target.MinVersion and Forms use.
func ParseVersion(v string) (int, error) {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || minor > 9 {
		return 0, fmt.Errorf("ptx: bad PTX version %q (want M.m)", v)
	}
	return major*10 + minor, nil
}

// vectorWidth checks that operand i has as many elements as the .v2/.v4 modifier says.
func vectorWidth(i int) func(*Instr) error {
	return func(in *Instr) error {
		want := 2
		if strings.Contains(in.Op, ".v4.") {
			want = 4
		}
		if n := len(in.Args[i].(Vec)); n != want {
			return fmt.Errorf("vector of %d, want %d", n, want)
		}
		return nil
	}
}

// vectorLengths checks the length of every (vector) operand.
func vectorLengths(ns ...int) func(*Instr) error {
	return func(in *Instr) error {
		for i, n := range ns {
			if got := len(in.Args[i].(Vec)); got != n {
				return fmt.Errorf("operand %d is a vector of %d, want %d", i, got, n)
			}
		}
		return nil
	}
}

// ldmatrixCount checks that ldmatrix .xN writes N registers.
func ldmatrixCount(in *Instr) error {
	want := map[string]int{".x1.": 1, ".x2.": 2, ".x4.": 4}
	for m, n := range want {
		if strings.Contains(in.Op, m) && len(in.Args[0].(Vec)) != n {
			return fmt.Errorf("%d destination registers, want %d", len(in.Args[0].(Vec)), n)
		}
	}
	return nil
}

// cpAsyncSize checks cp.async's copy size (and that src-size, when immediate, is
// within it).
func cpAsyncSize(sizes ...int64) func(*Instr) error {
	return func(in *Instr) error {
		size := int64(in.Args[2].(Imm))
		ok := false
		for _, s := range sizes {
			ok = ok || size == s
		}
		if !ok {
			return fmt.Errorf("copy size %d, want one of %v", size, sizes)
		}
		if src, isImm := in.Args[3].(Imm); isImm && (src < 0 || int64(src) > size) {
			return fmt.Errorf("src-size %d outside [0, %d]", src, size)
		}
		return nil
	}
}

// regCount checks setmaxnreg's register count: a multiple of 8 in 24..256.
func regCount(in *Instr) error {
	if n := in.Args[0].(Imm); n < 24 || n > 256 || n%8 != 0 {
		return fmt.Errorf("register count %d, want a multiple of 8 in 24..256", n)
	}
	return nil
}

// barrierOperands checks immediate barrier operands as ptxas does: the barrier is
// 0..15, a thread count a positive multiple of the warp size no larger than a
// CTA (1024).
func barrierOperands(in *Instr) error {
	if id, ok := in.Args[0].(Imm); ok && (id < 0 || id > 15) {
		return fmt.Errorf("barrier %d, want 0..15", id)
	}
	if len(in.Args) > 1 {
		if n, ok := in.Args[1].(Imm); ok && (n <= 0 || n > 1024 || n%32 != 0) {
			return fmt.Errorf("thread count %d, want a multiple of 32 in 32..1024", n)
		}
	}
	return nil
}
