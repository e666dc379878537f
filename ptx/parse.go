package ptx

import (
	"fmt"
	"strconv"
	"strings"

	arch "github.com/ptxgen/ptxgen/target"
)

// Parse reads PTX text back into a Module. It accepts the subset the printer writes
// (and the same subset written by hand, with free spacing and line breaks):
//
//   - the header .version, .target and .address_size;
//   - `.visible .entry name(.param .T name, ...)`, an optional `.reqntid N{, 1, 1}` and `.maxnreg N`;
//   - in a body: `.reg .T %p<N>;`, `{.extern} .shared .align A .b8 name[N];`, labels,
//     `// comments` and instructions with an optional guard `@p` or `@!p`.
//
// Operands are registers (including special registers such as %tid.x), integer
// immediates (decimal, negative, 0x hex), float immediates 0fXXXXXXXX, symbols,
// addresses [reg], [reg+off], [reg-off], [sym+off], vectors {a, b} and the sink `_`.
// A dual destination such as `%p1|%p2` (setp, shfl) has no operand type of its own in
// the model; it is kept as one Reg "%p1|%p2", which prints back unchanged.
//
// Comments outside function bodies (the printer's header) are dropped; comments inside
// a body are kept as *Comment so that Print(Parse(Print(m))) == Print(m). Errors name
// the line number and the offending text.
func Parse(text string) (*Module, error) {
	p := &parser{src: text, line: 1}
	m, err := p.module()
	if err != nil {
		return nil, err
	}
	return m, nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tPunct
	tComment
)

type token struct {
	kind tokKind
	text string
	line int
}

type parser struct {
	src  string
	pos  int
	line int
	tok  token // current token
	peek bool  // tok holds an unconsumed token
}

// ParseError is the error Parse returns.
type ParseError struct {
	Line int
	Text string // the source line
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("ptx: line %d: %s: %q", e.Line, e.Msg, e.Text)
}

func (p *parser) errAt(line int, format string, args ...any) error {
	// Find the text of the line.
	s := p.src
	for i := 1; i < line; i++ {
		j := strings.IndexByte(s, '\n')
		if j < 0 {
			s = ""
			break
		}
		s = s[j+1:]
	}
	if j := strings.IndexByte(s, '\n'); j >= 0 {
		s = s[:j]
	}
	return &ParseError{Line: line, Text: strings.TrimSpace(s), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) errf(t token, format string, args ...any) error {
	return p.errAt(t.line, format, args...)
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '%' || c == '$' || c == '.'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// lex scans the next token, comments included.
func (p *parser) lex() token {
	s := p.src
	for p.pos < len(s) {
		c := s[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(s) && s[p.pos+1] == '/':
			start := p.pos + 2
			end := strings.IndexByte(s[start:], '\n')
			if end < 0 {
				end = len(s)
			} else {
				end += start
			}
			p.pos = end
			text := strings.TrimSuffix(s[start:end], "\r")
			text = strings.TrimPrefix(text, " ")
			return token{tComment, text, p.line}
		case c == '/' && p.pos+1 < len(s) && s[p.pos+1] == '*':
			end := strings.Index(s[p.pos+2:], "*/")
			if end < 0 {
				return token{tPunct, "/*", p.line}
			}
			p.line += strings.Count(s[p.pos:p.pos+2+end], "\n")
			p.pos += end + 4
		case isIdentStart(c):
			start := p.pos
			p.pos++
			for p.pos < len(s) {
				c := s[p.pos]
				if isIdentChar(c) {
					p.pos++
				} else if c == ':' && p.pos+1 < len(s) && s[p.pos+1] == ':' {
					p.pos += 2 // "L2::128B", "shared::cta"
				} else {
					break
				}
			}
			return token{tIdent, s[start:p.pos], p.line}
		case c >= '0' && c <= '9':
			start := p.pos
			for p.pos < len(s) && (isIdentChar(s[p.pos])) {
				p.pos++
			}
			return token{tNum, s[start:p.pos], p.line}
		default:
			p.pos++
			return token{tPunct, s[p.pos-1 : p.pos], p.line}
		}
	}
	return token{tEOF, "", p.line}
}

// next returns the next token, skipping comments.
func (p *parser) next() token {
	for {
		t := p.nextC()
		if t.kind != tComment {
			return t
		}
	}
}

// nextC returns the next token including comments.
func (p *parser) nextC() token {
	if p.peek {
		p.peek = false
		return p.tok
	}
	return p.lex()
}

func (p *parser) unread(t token) {
	p.tok = t
	p.peek = true
}

func (p *parser) expect(text string) (token, error) {
	t := p.next()
	if t.text != text || t.kind == tEOF {
		if t.kind == tEOF {
			return t, p.errf(t, "expected %q, found end of input", text)
		}
		return t, p.errf(t, "expected %q, found %q", text, t.text)
	}
	return t, nil
}

func (p *parser) int(t token) (int, error) {
	if t.kind != tNum {
		return 0, p.errf(t, "expected a number, found %q", t.text)
	}
	n, err := strconv.Atoi(t.text)
	if err != nil {
		return 0, p.errf(t, "bad number %q", t.text)
	}
	return n, nil
}

func (p *parser) module() (*Module, error) {
	m := &Module{}
	// Shared arrays are declared at module scope, before the kernel that uses them.
	shared := &Func{}
	var declared []SharedDecl
	for {
		t := p.next()
		switch t.text {
		case ".shared", ".extern":
			if err := p.sharedDecl(shared, t); err != nil {
				return nil, err
			}
			continue
		case "":
			if t.kind == tEOF {
				if err := p.header(m, t, ""); err != nil {
					return nil, err
				}
				if len(shared.Shared) > 0 {
					return nil, p.errf(t, "shared array %s is declared after the last function", shared.Shared[0].Name)
				}
				return m, nil
			}
		case ".version":
			v := p.next()
			if m.Version != "" || v.kind != tNum || !isVersion(v.text) {
				return nil, p.errf(v, "bad .version %q: want one .version MAJOR.MINOR first", v.text)
			}
			m.Version = v.text
			continue
		case ".target":
			v := p.next()
			if err := p.header(m, t, ".target"); err != nil {
				return nil, err
			}
			if m.Target != "" || v.kind != tIdent || !isTargetName(v.text) {
				return nil, p.errf(v, "bad .target %q: want one .target such as sm_90 after .version", v.text)
			}
			m.Target = v.text
			continue
		case ".address_size":
			if err := p.header(m, t, ".address_size"); err != nil {
				return nil, err
			}
			v := p.next()
			n, err := p.int(v)
			if err != nil {
				return nil, err
			}
			if m.AddressSize != 0 || (n != 32 && n != 64) {
				return nil, p.errf(v, "bad .address_size %d: want one .address_size 32 or 64 after .target", n)
			}
			m.AddressSize = n
			continue
		case ".visible", ".entry":
			if err := p.header(m, t, ""); err != nil {
				return nil, err
			}
			if t.text == ".visible" {
				if _, err := p.expect(".entry"); err != nil {
					return nil, err
				}
			}
			f, err := p.function()
			if err != nil {
				return nil, err
			}
			// The arrays declared right before a function are its own; one declared
			// earlier in the module is the function's too where its body names it
			// (Print declares each array once per module).
			own := map[string]bool{}
			for _, d := range shared.Shared {
				own[d.Name] = true
			}
			for _, d := range declared {
				if !own[d.Name] && usesSym(f, d.Name) {
					shared.Shared = append(shared.Shared, d)
				}
			}
			declared = append(declared, shared.Shared...)
			f.Shared = append(shared.Shared, f.Shared...)
			shared = &Func{}
			m.Funcs = append(m.Funcs, f)
			continue
		}
		return nil, p.errf(t, "unexpected %q at top level", t.text)
	}
}

// header checks that the module header is complete up to the directive next: a
// module is .version, .target and .address_size, in that order, then its functions
// (next "" means the whole header).
func (p *parser) header(m *Module, t token, next string) error {
	switch {
	case m.Version == "":
		return p.errf(t, "missing .version before %s", describe(t))
	case next == ".target":
		return nil
	case m.Target == "":
		return p.errf(t, "missing .target before %s", describe(t))
	case next == ".address_size":
		return nil
	case m.AddressSize == 0:
		return p.errf(t, "missing .address_size before %s", describe(t))
	}
	return nil
}

func describe(t token) string {
	if t.kind == tEOF {
		return "the end"
	}
	return t.text
}

// isVersion reports whether s is a PTX ISA version, MAJOR.MINOR.
func isVersion(s string) bool {
	major, minor, ok := strings.Cut(s, ".")
	return ok && isDigits(major) && isDigits(minor)
}

func isDigits(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isTargetName reports whether s is a target name target.ParseID accepts (sm_90,
// sm_90a).
func isTargetName(s string) bool {
	_, err := arch.ParseID(s)
	return err == nil
}

func (p *parser) function() (*Func, error) {
	name := p.next()
	if name.kind != tIdent {
		return nil, p.errf(name, "bad entry name %q", name.text)
	}
	f := &Func{Name: name.text}
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	t := p.next()
	for t.text != ")" {
		if t.text != ".param" {
			return nil, p.errf(t, "expected .param, found %q", t.text)
		}
		typ := p.next()
		if typ.kind != tIdent || typ.text[0] != '.' {
			return nil, p.errf(typ, "bad parameter type %q", typ.text)
		}
		pn := p.next()
		if pn.kind != tIdent {
			return nil, p.errf(pn, "bad parameter name %q", pn.text)
		}
		f.Params = append(f.Params, Param{Name: pn.text, Type: Type(typ.text[1:])})
		t = p.next()
		if t.text == "," {
			t = p.next()
		} else if t.text != ")" {
			return nil, p.errf(t, "expected , or ) after parameter, found %q", t.text)
		}
	}
	t = p.next()
	if t.text == ".reqntid" {
		n, err := p.int(p.next())
		if err != nil {
			return nil, err
		}
		f.ReqNTid = n
		t = p.next()
		for t.text == "," {
			d := p.next()
			if k, err := p.int(d); err != nil {
				return nil, err
			} else if k != 1 {
				return nil, p.errf(d, ".reqntid: only 1-D blocks are supported")
			}
			t = p.next()
		}
	}
	if t.text == ".maxnreg" {
		n, err := p.int(p.next())
		if err != nil {
			return nil, err
		}
		f.MaxNReg = n
		t = p.next()
	}
	if t.text != "{" {
		return nil, p.errf(t, "expected { to open the body of %s, found %q", f.Name, t.text)
	}
	for {
		t := p.nextC()
		switch {
		case t.kind == tEOF:
			return nil, p.errf(t, "unterminated body of %s", f.Name)
		case t.kind == tComment:
			f.Body = append(f.Body, &Comment{Text: t.text})
		case t.text == "}":
			return f, nil
		case t.text == ".reg":
			if err := p.regDecl(f); err != nil {
				return nil, err
			}
		case t.text == ".shared" || t.text == ".extern":
			if err := p.sharedDecl(f, t); err != nil {
				return nil, err
			}
		default:
			if err := p.stmt(f, t); err != nil {
				return nil, err
			}
		}
	}
}

func (p *parser) regDecl(f *Func) error {
	typ := p.next()
	if typ.kind != tIdent || typ.text[0] != '.' {
		return p.errf(typ, "bad register type %q", typ.text)
	}
	name := p.next()
	if name.kind != tIdent || name.text[0] != '%' {
		return p.errf(name, "bad register name %q", name.text)
	}
	if _, err := p.expect("<"); err != nil {
		return p.errf(name, "only register ranges %%name<N> are supported")
	}
	n, err := p.int(p.next())
	if err != nil {
		return err
	}
	if _, err := p.expect(">"); err != nil {
		return err
	}
	if _, err := p.expect(";"); err != nil {
		return err
	}
	f.Regs = append(f.Regs, RegDecl{Type: Type(typ.text[1:]), Prefix: name.text, Count: n})
	return nil
}

func (p *parser) sharedDecl(f *Func, t token) error {
	var d SharedDecl
	if t.text == ".extern" {
		d.Extern = true
		if _, err := p.expect(".shared"); err != nil {
			return err
		}
	}
	t = p.next()
	if t.text == ".align" {
		n, err := p.int(p.next())
		if err != nil {
			return err
		}
		d.Align = n
		t = p.next()
	}
	if t.text != ".b8" {
		return p.errf(t, "shared arrays must be .b8, found %q", t.text)
	}
	name := p.next()
	if name.kind != tIdent {
		return p.errf(name, "bad shared array name %q", name.text)
	}
	d.Name = name.text
	if _, err := p.expect("["); err != nil {
		return err
	}
	t = p.next()
	if t.text != "]" {
		n, err := p.int(t)
		if err != nil {
			return err
		}
		d.Size = n
		if _, err := p.expect("]"); err != nil {
			return err
		}
	} else if !d.Extern {
		return p.errf(t, "shared array %s needs a size", d.Name)
	}
	if d.Extern && d.Size != 0 {
		return p.errf(t, "extern shared array %s must be unsized", d.Name)
	}
	if _, err := p.expect(";"); err != nil {
		return err
	}
	f.Shared = append(f.Shared, d)
	return nil
}

// stmt parses a label or an instruction starting at t.
func (p *parser) stmt(f *Func, t token) error {
	in := &Instr{}
	if t.text == "@" {
		g := p.next()
		if g.text == "!" {
			in.GuardNeg = true
			g = p.next()
		}
		if g.kind != tIdent || g.text[0] != '%' {
			return p.errf(g, "bad guard %q", g.text)
		}
		in.Guard = g.text
		t = p.next()
	}
	if t.kind != tIdent {
		return p.errf(t, "unexpected %q", t.text)
	}
	if in.Guard == "" {
		if c := p.next(); c.text == ":" {
			f.Body = append(f.Body, &Label{Name: t.text})
			return nil
		} else {
			p.unread(c)
		}
	}
	in.Op = t.text
	first := true
	for {
		c := p.next()
		if c.text == ";" && c.kind == tPunct {
			break
		}
		if !first {
			if c.text != "," {
				return p.errf(c, "expected , or ; after operand, found %q", c.text)
			}
			c = p.next()
		}
		first = false
		o, err := p.operand(c)
		if err != nil {
			return err
		}
		in.Args = append(in.Args, o)
	}
	f.Body = append(f.Body, in)
	return nil
}

func (p *parser) operand(t token) (Operand, error) {
	switch {
	case t.kind == tIdent && t.text == "_":
		return Sink{}, nil
	case t.kind == tIdent && t.text[0] == '%':
		if c := p.next(); c.text == "|" {
			q := p.next()
			if q.kind != tIdent || (q.text[0] != '%' && q.text != "_") {
				return nil, p.errf(q, "bad second destination %q", q.text)
			}
			return Reg(t.text + "|" + q.text), nil
		} else {
			p.unread(c)
		}
		return Reg(t.text), nil
	case t.kind == tIdent:
		return Sym(t.text), nil
	case t.kind == tNum:
		return p.number(t, false)
	case t.text == "-":
		n := p.next()
		if n.kind != tNum {
			return nil, p.errf(n, "expected a number after -, found %q", n.text)
		}
		return p.number(n, true)
	case t.text == "[":
		return p.address()
	case t.text == "{":
		var v Vec
		for {
			e := p.next()
			o, err := p.operand(e)
			if err != nil {
				return nil, err
			}
			v = append(v, o)
			c := p.next()
			if c.text == "}" {
				return v, nil
			}
			if c.text != "," {
				return nil, p.errf(c, "expected , or } in vector, found %q", c.text)
			}
		}
	}
	return nil, p.errf(t, "bad operand %q", t.text)
}

func (p *parser) number(t token, neg bool) (Operand, error) {
	s := t.text
	if len(s) == 10 && (s[:2] == "0f" || s[:2] == "0F") {
		if neg {
			return nil, p.errf(t, "negated float immediate -%s", s)
		}
		u, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return nil, p.errf(t, "bad float immediate %q", s)
		}
		return FImm(uint32(u)), nil
	}
	var u uint64
	var err error
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		u, err = strconv.ParseUint(s[2:], 16, 64)
	} else {
		u, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil {
		return nil, p.errf(t, "bad immediate %q", s)
	}
	if neg {
		return Imm(-int64(u)), nil
	}
	return Imm(int64(u)), nil
}

func (p *parser) address() (Operand, error) {
	b := p.next()
	if b.kind != tIdent {
		return nil, p.errf(b, "bad address base %q", b.text)
	}
	a := Addr{Base: Sym(b.text)}
	if b.text[0] == '%' {
		a.Base = Reg(b.text)
	}
	t := p.next()
	if t.text == "+" || t.text == "-" {
		neg := t.text == "-"
		n := p.next()
		if n.text == "-" {
			neg = !neg
			n = p.next()
		}
		if n.kind != tNum {
			return nil, p.errf(n, "bad address offset %q", n.text)
		}
		o, err := p.number(n, neg)
		if err != nil {
			return nil, err
		}
		off, ok := o.(Imm)
		if !ok {
			return nil, p.errf(n, "bad address offset %q", n.text)
		}
		a.Off = int64(off)
		t = p.next()
	}
	if t.text != "]" {
		return nil, p.errf(t, "expected ] to close the address, found %q", t.text)
	}
	return a, nil
}

// usesSym reports whether an instruction of f names the symbol name (directly or as
// an address base).
func usesSym(f *Func, name string) bool {
	for _, st := range f.Body {
		in, ok := st.(*Instr)
		if !ok {
			continue
		}
		for _, a := range in.Args {
			if s, ok := a.(Sym); ok && string(s) == name {
				return true
			}
			if ad, ok := a.(Addr); ok && ad.Base == Sym(name) {
				return true
			}
		}
	}
	return false
}
