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
	MinSM  int
	MinPTX int
	PTXOn  map[string]int
	// Optional is how many trailing operands of Args may be left out.
	Optional int
	// Check, if set, checks what the operand kinds cannot say (vector lengths,
	// immediate values).
	Check func(*Instr) error
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
	kinds := strings.Fields(f.Args)
	if n := len(in.Args); n > len(kinds) || n < len(kinds)-f.Optional {
		want := fmt.Sprint(len(kinds))
		if f.Optional > 0 {
			want = fmt.Sprintf("%d to %d", len(kinds)-f.Optional, len(kinds))
		}
		return fmt.Errorf("ptx: %s: %d operands, want %s", instrString(in), n, want)
	}
	for i, a := range in.Args {
		if k := operandKind(a); !strings.ContainsRune(kinds[i], k) {
			return fmt.Errorf("ptx: %s: operand %d is %s, want %s", instrString(in), i, kindName(k), kindNames(kinds[i]))
		}
	}
	id, err := arch.ParseID(target)
	if err != nil {
		return fmt.Errorf("ptx: %v", err)
	}
	if sm := id.SM; sm < f.MinSM {
		return fmt.Errorf("ptx: %s needs sm_%d or later (target %s)", in.Op, f.MinSM, target)
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
// target, from Forms; false when op is not a known form.
func MinVersion(op, target string) (int, bool) {
	f := forms[op]
	if f == nil {
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
