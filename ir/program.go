package ir

import (
	"fmt"
	"strings"
)

// The text form of a program: an optional header, then its kernels in launch order.
//
//	program mla_decode sms 188 {
//	  workspace ws_o perpart 262144
//	  workspace ws_lse perpart 256
//	}
//
//	kernel mla_decode_h16_split_small(...) ... {
//	  ...
//	}
//
//	kernel mla_combine_20(...) ... {
//	  ...
//	}
//
// The header names the program, the SM count it was planned for (sms, omitted when 0:
// the target's) and its workspace buffers (bytes fixed, plus perpart per (row, chunk)
// pair; a kernel parameter of the same name is bound to the buffer). A file of one
// kernel without workspace needs no header: it is that kernel's program, named after
// it. The kernels launch in the order they appear, each after the one before it; a
// launch plan (Program.Plan) is not part of the text form, so a program printed from
// one launches every kernel it lists.

// MaxSMs bounds a program's SM count.
const MaxSMs = 1 << 16

// MaxBufferBytes bounds the sizes a program declares for its buffers: a parameter's
// bytes, perrow and perpart, a workspace buffer's fixed and per-part sizes (256 TiB,
// past any GPU's memory), so that a size is not mistaken for a small one by
// arithmetic that wraps.
const MaxBufferBytes = 1 << 48

// MaxWorkspaceBytes bounds a workspace buffer's fixed and per-part sizes.
const MaxWorkspaceBytes = MaxBufferBytes

// PrintProgram renders p in the text form ParseProgram reads back: a program of one
// kernel without workspace or SM count prints as that kernel alone (Print), which
// reads back as a program named after the kernel.
func PrintProgram(p *Program) string {
	var b strings.Builder
	if programHeader(p) {
		fmt.Fprintf(&b, "program %s", p.Name)
		if p.SMs != 0 {
			fmt.Fprintf(&b, " sms %d", p.SMs)
		}
		b.WriteString(" {\n")
		for _, w := range p.Workspace {
			fmt.Fprintf(&b, "  workspace %s", w.Name)
			if w.Bytes != 0 {
				fmt.Fprintf(&b, " bytes %d", w.Bytes)
			}
			if w.PerPart != 0 {
				fmt.Fprintf(&b, " perpart %d", w.PerPart)
			}
			b.WriteString("\n")
		}
		b.WriteString("}\n\n")
	}
	for i, k := range p.Kernels {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(Print(k))
	}
	return b.String()
}

// programHeader reports whether p needs the program header to be read back.
func programHeader(p *Program) bool {
	return len(p.Kernels) != 1 || len(p.Workspace) > 0 || p.SMs != 0
}

// ParseProgram reads the text form of a program (PrintProgram), or of one kernel
// (Print). The program is verified (VerifyProgram) before it is returned.
func ParseProgram(src string) (*Program, error) {
	p := &parser{toks: lex(src)}
	if len(p.toks) == 0 {
		return nil, errNoKernel
	}
	prog := &Program{}
	header := p.peek() == "program"
	if header {
		if err := p.programHeader(prog); err != nil {
			return nil, err
		}
	}
	for p.peek() != "" {
		if p.peek() != "kernel" {
			return nil, p.errf("want kernel, have %q", p.peek())
		}
		if !header && len(prog.Kernels) == 1 {
			return nil, p.errf("a second kernel needs a program header before the first (program NAME { workspace ... }): the kernels then launch in the order they appear")
		}
		p.vals = map[string]*Value{} // each kernel names its own values
		k, err := p.kernel()
		if err != nil {
			return nil, err
		}
		if err := Verify(k); err != nil {
			return nil, err
		}
		prog.Kernels = append(prog.Kernels, k)
	}
	if !header && len(prog.Kernels) == 1 {
		prog.Name = prog.Kernels[0].Name
	}
	if err := VerifyProgram(prog); err != nil {
		return nil, err
	}
	return prog, nil
}

// programHeader parses `program NAME [sms N] { workspace NAME [bytes N] [perpart N] ... }`.
func (p *parser) programHeader(prog *Program) error {
	p.next()
	prog.Name = p.next()
	if p.peek() == "sms" {
		p.next()
		n, err := p.int()
		if err != nil {
			return err
		}
		if n < 0 || n > MaxSMs {
			p.pos--
			return p.errf("sms %d, want 0..%d (0: the target's)", n, MaxSMs)
		}
		prog.SMs = int(n)
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	for p.peek() != "}" {
		if err := p.expect("workspace"); err != nil {
			return err
		}
		w := Workspace{Name: p.next()}
		for _, attr := range []string{"bytes", "perpart"} {
			if p.peek() != attr {
				continue
			}
			p.next()
			n, err := p.int()
			if err != nil {
				return err
			}
			if n < 0 || n > MaxWorkspaceBytes {
				p.pos--
				return p.errf("workspace %s: %s %d, want 0..%d", w.Name, attr, n, int64(MaxWorkspaceBytes))
			}
			if attr == "bytes" {
				w.Bytes = n
			} else {
				w.PerPart = n
			}
		}
		prog.Workspace = append(prog.Workspace, w)
	}
	p.next()
	return nil
}

// VerifyProgram checks a program: a name, at least one kernel, each verified, with a
// distinct name; workspace buffers with distinct names, sizes in range, each a
// pointer parameter of some kernel, a per-part size only where a kernel has a split;
// a parameter that several kernels take has one type (the caller passes one argument).
func VerifyProgram(p *Program) error {
	if err := CheckName("program", p.Name); err != nil {
		return err
	}
	if len(p.Kernels) == 0 {
		return fmt.Errorf("ir: program %s has no kernels", p.Name)
	}
	if p.SMs < 0 || p.SMs > MaxSMs {
		return fmt.Errorf("ir: program %s: sms %d, want 0..%d (0: the target's)", p.Name, p.SMs, MaxSMs)
	}
	kernels := map[string]bool{}
	type use struct {
		kernel string
		t      Type
	}
	params := map[string]use{}
	split := false
	for _, k := range p.Kernels {
		if err := Verify(k); err != nil {
			return err
		}
		if kernels[k.Name] {
			return fmt.Errorf("ir: program %s: kernel %s appears twice", p.Name, k.Name)
		}
		kernels[k.Name] = true
		split = split || k.SplitParam() != nil
		for _, prm := range k.Params {
			n, t := prm.Value.Name, prm.Value.Type
			if u, ok := params[n]; ok && !u.t.Equal(t) {
				return fmt.Errorf("ir: program %s: parameter %s is %s in kernel %s but %s in kernel %s (kernels share an argument by name)", p.Name, prm.Value, t, k.Name, u.t, u.kernel)
			}
			params[n] = use{k.Name, t}
		}
	}
	workspace := map[string]bool{}
	for _, w := range p.Workspace {
		if err := CheckName("workspace buffer", w.Name); err != nil {
			return fmt.Errorf("%w (program %s)", err, p.Name)
		}
		if workspace[w.Name] {
			return fmt.Errorf("ir: program %s: workspace %s declared twice", p.Name, w.Name)
		}
		workspace[w.Name] = true
		if w.Bytes < 0 || w.Bytes > MaxWorkspaceBytes || w.PerPart < 0 || w.PerPart > MaxWorkspaceBytes {
			return fmt.Errorf("ir: program %s: workspace %s: bytes %d, perpart %d, want 0..%d", p.Name, w.Name, w.Bytes, w.PerPart, int64(MaxWorkspaceBytes))
		}
		if w.PerPart > 0 && !split {
			return fmt.Errorf("ir: program %s: workspace %s grows per (row, chunk) pair (perpart) but no kernel has a split parameter", p.Name, w.Name)
		}
		u, ok := params[w.Name]
		if !ok {
			return fmt.Errorf("ir: program %s: workspace %s is no kernel's parameter", p.Name, w.Name)
		}
		if u.t.Kind != Ptr {
			return fmt.Errorf("ir: program %s: kernel %s: parameter %%%s names workspace %s but is a %s, not a pointer", p.Name, u.kernel, w.Name, w.Name, u.t)
		}
	}
	return nil
}
