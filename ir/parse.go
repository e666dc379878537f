package ir

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads the text form written by Print. Parse(Print(k)) prints identically,
// and the kernel is verified before it is returned.
func Parse(src string) (*Kernel, error) {
	p := &parser{toks: lex(src), vals: map[string]*Value{}}
	if len(p.toks) == 0 {
		return nil, errNoKernel
	}
	k, err := p.kernel()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		if p.peek() == "kernel" || p.peek() == "program" {
			return nil, p.errf("a second kernel: this file is a program (ParseProgram reads it)")
		}
		return nil, p.errf("unexpected %q after the kernel", p.peek())
	}
	if err := Verify(k); err != nil {
		return nil, err
	}
	return k, nil
}

// errNoKernel is the error of a text with no tokens: an empty file, or one of
// comments only.
var errNoKernel = errors.New("ir: parse: no kernel: the text is empty or only comments (want kernel NAME(...) or a program header)")

type token struct {
	text string
	line int
}

// lex splits the source into tokens: words (which may carry a <...> suffix, as in
// tile<4x8xf32>), %names, numbers and single punctuation characters. // comments end
// at the end of the line.
func lex(src string) []token {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.IndexByte("()[]{},:=", c) >= 0:
			toks = append(toks, token{string(c), line})
			i++
		default:
			j := i
			for j < len(src) && strings.IndexByte("()[]{},:= \t\r\n", src[j]) < 0 {
				if src[j] == '<' {
					for j < len(src) && src[j] != '>' && src[j] != '\n' {
						j++
					}
				}
				j++
			}
			if j > len(src) {
				j = len(src)
			}
			toks = append(toks, token{src[i:j], line})
			i = j
		}
	}
	return toks
}

type parser struct {
	toks  []token
	pos   int
	vals  map[string]*Value
	loops int // loops open around the current op
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].text
	}
	return ""
}

func (p *parser) errf(format string, args ...any) error {
	line := 0
	if p.pos < len(p.toks) {
		line = p.toks[p.pos].line
	} else if len(p.toks) > 0 {
		line = p.toks[len(p.toks)-1].line
	}
	return fmt.Errorf("ir: parse: line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *parser) next() string {
	s := p.peek()
	p.pos++
	return s
}

func (p *parser) expect(s string) error {
	if got := p.peek(); got != s {
		return p.errf("want %q, have %q", s, got)
	}
	p.pos++
	return nil
}

func (p *parser) int() (int64, error) {
	s := p.next()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.pos--
		return 0, p.errf("want an integer, have %q", s)
	}
	return n, nil
}

func (p *parser) typ() (Type, error) {
	s := p.next()
	t, err := ParseType(s)
	if err != nil {
		p.pos--
		return Type{}, p.errf("%v", err)
	}
	return t, nil
}

// def introduces a new value name.
func (p *parser) def(tok string, t Type, op *Op) (*Value, error) {
	if !strings.HasPrefix(tok, "%") || !validName(tok[1:]) {
		return nil, p.errf("want a value name like %%x, have %q", tok)
	}
	if p.vals[tok[1:]] != nil {
		return nil, p.errf("value %s defined twice", tok)
	}
	v := &Value{Name: tok[1:], Type: t, Def: op}
	p.vals[v.Name] = v
	return v, nil
}

// use looks up a defined value.
func (p *parser) use() (*Value, error) {
	tok := p.next()
	if !strings.HasPrefix(tok, "%") {
		p.pos--
		return nil, p.errf("want a value, have %q", tok)
	}
	v := p.vals[tok[1:]]
	if v == nil {
		p.pos--
		return nil, p.errf("undefined value %s", tok)
	}
	return v, nil
}

func (p *parser) uses(end string) ([]*Value, error) {
	var vs []*Value
	for p.peek() != end {
		if len(vs) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		v, err := p.use()
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// yielded parses a yield's values: comma-separated, up to the first token that does
// not continue the list (the body's "}").
func (p *parser) yielded() ([]*Value, error) {
	var vs []*Value
	for {
		if !strings.HasPrefix(p.peek(), "%") {
			if len(vs) == 0 && p.peek() != "}" {
				return nil, p.errf("want a value, have %q", p.peek())
			}
			return vs, nil
		}
		v, err := p.use()
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
		if p.peek() != "," {
			return vs, nil
		}
		p.next()
		if !strings.HasPrefix(p.peek(), "%") {
			return nil, p.errf("want a value after \",\", have %q", p.peek())
		}
	}
}

// strided parses a pointer parameter's "strided RUN [%s x N, %s x %n / D]" after
// the keyword.
func (p *parser) strided(prm *Param) error {
	run, err := p.int()
	if err != nil {
		return err
	}
	prm.Run = run
	if err := p.expect("["); err != nil {
		return err
	}
	name := func() (string, error) {
		tok := p.next()
		if !strings.HasPrefix(tok, "%") || !validName(tok[1:]) {
			return "", p.errf("want a parameter name like %%lda, have %q", tok)
		}
		return tok[1:], nil
	}
	for p.peek() != "]" {
		if len(prm.Strides) > 0 {
			if err := p.expect(","); err != nil {
				return err
			}
		}
		var d StrideDim
		if d.Stride, err = name(); err != nil {
			return err
		}
		if err := p.expect("x"); err != nil {
			return err
		}
		if strings.HasPrefix(p.peek(), "%") {
			if d.CountParam, err = name(); err != nil {
				return err
			}
			if err := p.expect("/"); err != nil {
				return err
			}
			if d.CountDiv, err = p.int(); err != nil {
				return err
			}
		} else if d.Count, err = p.int(); err != nil {
			return err
		}
		prm.Strides = append(prm.Strides, d)
	}
	p.next()
	return nil
}

func (p *parser) kernel() (*Kernel, error) {
	if err := p.expect("kernel"); err != nil {
		return nil, err
	}
	k := &Kernel{Name: p.next(), Body: &Block{}}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	for p.peek() != ")" {
		if len(k.Params) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		name := p.next()
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		v, err := p.def(name, t, nil)
		if err != nil {
			return nil, err
		}
		prm := &Param{Value: v}
		if p.peek() == "split" {
			p.next()
			prm.Split = true
		}
		given := map[string]bool{}
		for p.peek() == "div" || p.peek() == "bytes" || p.peek() == "perrow" || p.peek() == "perpart" || p.peek() == "strided" {
			if given[p.peek()] {
				return nil, p.errf("parameter %s: %s given twice; give each of div, bytes, perrow, perpart and strided at most once", v, p.peek())
			}
			given[p.peek()] = true
			attr := p.next()
			if attr == "strided" {
				if err := p.strided(prm); err != nil {
					return nil, err
				}
				continue
			}
			n, err := p.int()
			if err != nil {
				return nil, err
			}
			switch attr {
			case "div":
				prm.Div = int(n)
			case "bytes":
				prm.Bytes = n
			case "perpart":
				prm.PerPart = n
			default:
				prm.PerRow = n
			}
		}
		k.Params = append(k.Params, prm)
	}
	p.next()
	if err := p.expect("grid"); err != nil {
		return nil, err
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	for i := 0; i < 3; i++ {
		if i > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		if strings.HasPrefix(p.peek(), "%") {
			k.GridParam[i] = p.next()[1:]
			if err := p.expect("max"); err != nil {
				return nil, err
			}
		}
		n, err := p.int()
		if err != nil {
			return nil, err
		}
		k.Grid[i] = int(n)
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if err := p.expect("warps"); err != nil {
		return nil, err
	}
	n, err := p.int()
	if err != nil {
		return nil, err
	}
	k.Warps = int(n)
	for p.peek() == "role" {
		p.next()
		r := Role{Name: p.next()}
		first, err := p.int()
		if err != nil {
			return nil, err
		}
		warps, err := p.int()
		if err != nil {
			return nil, err
		}
		r.First, r.Warps = int(first), int(warps)
		k.Roles = append(k.Roles, r)
	}
	if p.peek() == "latency" {
		p.next()
		name := p.next()
		found := false
		for l, s := range latencyNames {
			if s == name && l != LatencyAuto {
				k.Latency, found = l, true
			}
		}
		if !found {
			return nil, p.errf("latency %q, want small or large", name)
		}
	}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	if err := p.block(k.Body, false); err != nil {
		return nil, err
	}
	return k, nil
}

// block parses ops up to and including the closing brace; a loop's body (loop) may
// end in a yield.
func (p *parser) block(b *Block, loop bool) error {
	for {
		switch p.peek() {
		case "":
			return p.errf("missing }")
		case "}":
			p.next()
			return nil
		case "yield":
			if !loop {
				return p.errf("yield outside a loop: only a loop's body yields (its carried values)")
			}
			p.next()
			vs, err := p.yielded()
			if err != nil {
				return err
			}
			b.Yield = vs
			if p.peek() != "}" {
				return p.errf("yield ends a loop's body: want \"}\" after it, have %q", p.peek())
			}
			continue
		}
		op, err := p.op()
		if err != nil {
			return err
		}
		b.Ops = append(b.Ops, op)
	}
}

func (p *parser) op() (*Op, error) {
	start := p.pos // errors of the whole op name its first line
	var names []string
	if strings.HasPrefix(p.peek(), "%") {
		for {
			names = append(names, p.next())
			if p.peek() != "," {
				break
			}
			p.next()
		}
		if err := p.expect("="); err != nil {
			return nil, err
		}
	}
	opTok := p.pos
	o := &Op{Kind: OpKind(p.next())}
	var err error
	switch o.Kind {
	case OpProgramID:
		o.Int, err = p.int()
	case OpConst:
		// The value's meaning depends on the result type, which follows.
		lit := p.next()
		if err = p.expect(":"); err != nil {
			return nil, err
		}
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		p.pos -= 2
		if t.Elem.IsFloat() {
			o.Float, err = parseFloat(lit)
		} else {
			o.Int, err = strconv.ParseInt(lit, 10, 64)
		}
		if err != nil {
			return nil, p.errf("bad constant %q for %s", lit, t)
		}
	case OpCmp:
		o.Pred = p.next()
		o.Args, err = p.uses(":")
	case OpReduce, OpBroadcast, OpColumn, OpSlice:
		if o.Kind == OpReduce {
			o.Pred = p.next()
		}
		var v *Value
		if v, err = p.use(); err != nil {
			return nil, err
		}
		o.Args = []*Value{v}
		if err = p.expect(","); err != nil {
			return nil, err
		}
		if o.Kind == OpSlice {
			var start *Value
			if start, err = p.use(); err != nil {
				return nil, err
			}
			o.Args = append(o.Args, start)
			if err = p.expect(","); err != nil {
				return nil, err
			}
		}
		o.Int, err = p.int()
	case OpLoad, OpStore:
		err = p.memory(o)
	case OpFor:
		return p.loop(o, names, start)
	case OpDot:
		if o.Args, err = p.dotOperands(); err == nil {
			o.Dot, err = p.dotSchedule()
		}
	default:
		o.Args, err = p.uses(":")
	}
	if err != nil {
		return nil, err
	}
	if o.Kind == OpStore {
		if len(names) > 0 {
			return nil, p.errf("store has no result")
		}
		p.role(o)
		if err := checkOp(o); err != nil {
			p.pos = start
			return nil, p.errf("%v", err)
		}
		return o, nil
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	if len(names) != 1 {
		p.pos = opTok
		return nil, p.errf("%s has one result, have %d names", o.Kind, len(names))
	}
	v, err := p.def(names[0], t, o)
	if err != nil {
		return nil, err
	}
	o.Results = []*Value{v}
	p.role(o)
	if err := checkOp(o); err != nil {
		p.pos = start
		return nil, p.errf("%v", err)
	}
	return o, nil
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

func (p *parser) memory(o *Op) error {
	ptr, err := p.use()
	if err != nil {
		return err
	}
	if err := p.expect("["); err != nil {
		return err
	}
	addr, err := p.uses("]")
	if err != nil {
		return err
	}
	p.next()
	o.Args = append([]*Value{ptr}, addr...)
	for _, kw := range []string{"mask", "bound"} {
		if p.peek() != kw {
			continue
		}
		p.next()
		if err := p.expect("("); err != nil {
			return err
		}
		v, err := p.use()
		if err != nil {
			return err
		}
		if err := p.expect(")"); err != nil {
			return err
		}
		o.Args = append(o.Args, v)
		if kw == "mask" {
			o.HasMask = true
		} else {
			o.HasBound = true
		}
	}
	if o.Kind == OpStore {
		if err := p.expect(","); err != nil {
			return err
		}
		v, err := p.use()
		if err != nil {
			return err
		}
		o.Args = append(o.Args, v)
	}
	return nil
}

func (p *parser) loop(o *Op, names []string, start int) (*Op, error) {
	ivTok := p.next()
	if err := p.expect("="); err != nil {
		return nil, err
	}
	lo, err := p.use()
	if err != nil {
		return nil, err
	}
	if err := p.expect("to"); err != nil {
		return nil, err
	}
	hi, err := p.use()
	if err != nil {
		return nil, err
	}
	if err := p.expect("step"); err != nil {
		return nil, err
	}
	if o.Int, err = p.int(); err != nil {
		return nil, err
	}
	if p.peek() == "stages" {
		p.next()
		n, err := p.int()
		if err != nil {
			return nil, err
		}
		if n < 1 || n > MaxStages {
			return nil, p.errf("stages %d: want 1..%d", n, MaxStages)
		}
		if n > 1 {
			o.Stages = int(n)
		}
	}
	if p.peek() == "ahead" {
		p.next()
		n, err := p.int()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > MaxAhead {
			return nil, p.errf("ahead %d: want 0..%d", n, MaxAhead)
		}
		o.Ahead = int(n)
		if n == 0 {
			o.Ahead = NoAhead
		}
	}
	o.Args = []*Value{lo, hi}
	o.Body = &Block{}
	iv, err := p.def(ivTok, ScalarOf(I32), nil)
	if err != nil {
		return nil, err
	}
	o.Body.Args = []*Value{iv}
	if p.peek() == "iter" {
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		for p.peek() != ")" {
			if len(o.Args) > 2 {
				if err := p.expect(","); err != nil {
					return nil, err
				}
			}
			argTok := p.next()
			if err := p.expect("="); err != nil {
				return nil, err
			}
			in, err := p.use()
			if err != nil {
				return nil, err
			}
			a, err := p.def(argTok, in.Type, nil)
			if err != nil {
				return nil, err
			}
			o.Args = append(o.Args, in)
			o.Body.Args = append(o.Body.Args, a)
		}
		p.next()
	}
	p.role(o)
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	if len(names) != len(o.Args)-2 {
		return nil, p.errf("loop carries %d values but names %d results", len(o.Args)-2, len(names))
	}
	if p.loops++; p.loops > MaxLoopDepth {
		return nil, p.errf("loops nest %d deep, more than the limit of %d", p.loops, MaxLoopDepth)
	}
	if err := p.block(o.Body, true); err != nil {
		return nil, err
	}
	p.loops--
	for i, n := range names {
		v, err := p.def(n, o.Args[2+i].Type, o)
		if err != nil {
			return nil, err
		}
		o.Results = append(o.Results, v)
	}
	if err := checkOp(o); err != nil {
		p.pos = start
		return nil, p.errf("%v", err)
	}
	return o, nil
}

// dotOperands reads a dot's three comma-separated operands.
func (p *parser) dotOperands() ([]*Value, error) {
	var vs []*Value
	for i := 0; i < 3; i++ {
		if i > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		v, err := p.use()
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// dotSchedule reads a dot's optional schedule clauses (DotSchedule), each at most
// once, in any order; replicate and splitk refine warps, so they need it.
func (p *parser) dotSchedule() (*DotSchedule, error) {
	var s DotSchedule
	seen := map[string]bool{}
	for {
		kw := p.peek()
		switch kw {
		case "warps", "replicate", "splitk", "a", "b", "kperm", "atom":
		default:
			if len(seen) == 0 {
				return nil, nil
			}
			if !seen["warps"] && (seen["replicate"] || seen["splitk"]) {
				return nil, p.errf("dot schedule without warps RxC: replicate and splitk refine the warp grid, so a schedule with them states it")
			}
			if err := s.check(); err != nil {
				return nil, p.errf("dot schedule: %v", err)
			}
			return &s, nil
		}
		if seen[kw] {
			return nil, p.errf("dot schedule states %s twice", kw)
		}
		seen[kw] = true
		p.next()
		switch kw {
		case "warps":
			grid := p.next()
			r, c, ok := strings.Cut(grid, "x")
			wm, err1 := strconv.Atoi(r)
			wn, err2 := strconv.Atoi(c)
			if !ok || err1 != nil || err2 != nil {
				p.pos--
				return nil, p.errf("warps %q: want RxC, two counts such as 2x4", grid)
			}
			s.Warps = [2]int{wm, wn}
		case "replicate", "splitk":
			n, err := p.int()
			if err != nil {
				return nil, err
			}
			if n < 1 || n > MaxDotWarps {
				return nil, p.errf("%s %d: want 1..%d", kw, n, MaxDotWarps)
			}
			if kw == "replicate" {
				s.Replicate = int(n)
			} else {
				s.SplitK = int(n)
			}
		case "a":
			s.AHome = p.next()
		case "b":
			s.BHome = p.next()
		case "kperm":
			s.KPerm = true
		case "atom":
			s.Atom = p.next()
		}
	}
}

// role reads an op's optional placement, "on NAME" (Op.Role); Verify checks that
// the kernel declares the role.
func (p *parser) role(o *Op) {
	if p.peek() == "on" {
		p.next()
		o.Role = p.next()
	}
}
