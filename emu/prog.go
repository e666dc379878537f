package emu

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ptx"
)

// fprog is one decoded kernel.
type fprog struct {
	name      string
	fn        *ptx.Func
	code      []instr
	nslots    int // register slots per lane
	npred     int
	inits     []slotInit // slots set before the CTA starts (specials, constants, params)
	static    int        // bytes of static .shared arrays (the dynamic window follows)
	hasExtern bool
	usesAsync bool
	lines     *lineMap
}

// instr is one decoded instruction. exec runs it for the lanes in mask (the active
// lanes whose guard holds; never zero).
type instr struct {
	guard int32 // predicate index, -1 for none
	neg   bool
	cost  int32 // InstrCost, for Launch.Work
	exec  func(w *warp, mask uint32) error
	pc    int // index in fprog.code
	src   *ptx.Instr
	fp    *fprog
}

func (in *instr) text() string { return in.src.String() }

type initKind uint8

const (
	initConst initKind = iota
	initTid
	initNtid
	initCtaid
	initNctaid
	initLaneid
	initWarpid
	initParam
)

type slotInit struct {
	slot int
	kind initKind
	dim  int    // x, y, z for the special registers; param index for initParam
	val  uint64 // constants
}

// warp is one warp of a running CTA.
type warp struct {
	c      *cta
	id     int
	r      []uint64 // slot*32 + lane
	p      []uint32 // predicate masks
	pc     int
	active uint32 // lanes that exist and have not exited
	state  uint8
	bar    int // barrier the warp waits at
	barPC  int
	// vc[x] is the latest clock of warp x this warp has synchronized with (its
	// own at vc[id]): the race checker's vector clock (see cta.track).
	vc []uint32
	// partial lists the warp's arrivals at barriers of fewer threads than the
	// CTA, oldest first (see cta.reaches).
	partial []partialArrival
}

// partialArrival is a warp's arrival at a named barrier of fewer threads than the
// CTA: its clock released there and the warps of that barrier's generation.
type partialArrival struct {
	clk   uint32
	warps uint32
}

const (
	running uint8 = iota
	blocked
	exited
)

// slot returns the 32 lanes of slot s.
func (w *warp) slot(s int) *[32]uint64 { return (*[32]uint64)(w.r[s*32:]) }

// fault builds a runtime error for lane (or the whole warp when lane < 0).
func (w *warp) fault(in *instr, lane int, format string, args ...any) *Error {
	c := w.c
	e := &Error{Kernel: c.fp.name, CTA: c.id, Thread: -1, Warp: w.id, Msg: fmt.Sprintf(format, args...)}
	if in != nil {
		e.Instr = in.text()
		e.Line = c.fp.lines.line(in.src)
	}
	if lane >= 0 {
		e.Thread = w.id*32 + lane
	}
	return e
}

func (w *warp) memFault(in *instr, lane int, space string, addr uint64, format string, args ...any) *Error {
	e := w.fault(in, lane, format, args...)
	e.Space, e.Addr = space, addr
	return e
}

// ---- decoding ----

type decoder struct {
	mod    *ptx.Module
	f      *ptx.Func
	fp     *fprog
	regs   map[string]int // register name -> slot
	width  []int          // bits of each slot (64 for constants)
	preds  map[string]int
	consts map[uint64]int
	specs  map[string]int
	params map[string]int // param name -> index
	pslots map[int]int    // param index -> slot
	shared map[string]uint32
	labels map[string]int
	sink   int
	ptype  []ptx.Type
}

func decodeFunc(mod *ptx.Module, f *ptx.Func, lines *lineMap) (*fprog, error) {
	fp := &fprog{name: f.Name, fn: f, lines: lines}
	d := &decoder{mod: mod, f: f, fp: fp, regs: map[string]int{}, preds: map[string]int{},
		consts: map[uint64]int{}, specs: map[string]int{}, params: map[string]int{},
		pslots: map[int]int{}, shared: map[string]uint32{}, labels: map[string]int{}, sink: -1}
	bad := func(s ptx.Stmt, format string, args ...any) error {
		e := &DecodeError{Kernel: f.Name, Line: lines.line(s), Msg: fmt.Sprintf(format, args...)}
		if in, ok := s.(*ptx.Instr); ok {
			e.Instr = in.String()
		}
		return e
	}
	for _, r := range f.Regs {
		for i := 0; i < r.Count; i++ {
			name := r.Prefix + strconv.Itoa(i)
			if r.Type == "pred" {
				d.preds[name] = len(d.preds)
				continue
			}
			w := typeBits(string(r.Type))
			if w == 0 {
				return nil, &DecodeError{Kernel: f.Name, Msg: fmt.Sprintf("register type .%s not supported", r.Type)}
			}
			d.regs[name] = len(d.width)
			d.width = append(d.width, w)
		}
	}
	for i, p := range f.Params {
		d.params[p.Name] = i
		d.ptype = append(d.ptype, p.Type)
	}
	// Static arrays first, then the extern (dynamic) window, as CUDA lays them out.
	off := 0
	for _, s := range f.Shared {
		if s.Extern {
			continue
		}
		a := max(s.Align, 1)
		off = (off + a - 1) / a * a
		d.shared[s.Name] = uint32(off)
		off += s.Size
	}
	for _, s := range f.Shared {
		if !s.Extern {
			continue
		}
		a := max(s.Align, 16)
		off = (off + a - 1) / a * a
		d.shared[s.Name] = uint32(off)
		fp.hasExtern = true
	}
	fp.static = off
	// Labels point at the next instruction.
	n := 0
	for _, s := range f.Body {
		switch s := s.(type) {
		case *ptx.Label:
			if _, dup := d.labels[s.Name]; dup {
				return nil, bad(s, "label %s defined twice", s.Name)
			}
			d.labels[s.Name] = n
		case *ptx.Instr:
			n++
		}
	}
	fp.code = make([]instr, n)
	n = 0
	for _, s := range f.Body {
		src, ok := s.(*ptx.Instr)
		if !ok {
			continue
		}
		in := &fp.code[n]
		n++
		in.src, in.fp, in.guard, in.pc = src, fp, -1, n-1
		in.cost = int32(InstrCost(src.Op))
		if src.Guard != "" {
			g, ok := d.preds[canonReg(src.Guard)]
			if !ok {
				return nil, bad(s, "guard %s is not a declared predicate", src.Guard)
			}
			in.guard, in.neg = int32(g), src.GuardNeg
		}
		exec, err := d.decode(in)
		if err != nil {
			return nil, bad(s, "%v", err)
		}
		in.exec = exec
	}
	fp.nslots = len(d.width)
	fp.npred = len(d.preds)
	return fp, nil
}

// canonReg drops leading zeros from a register's index, as ptxas does: with
// .reg .b32 %x<100>, %x07 is %x7.
func canonReg(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	j := i
	for j < len(name)-1 && name[j] == '0' {
		j++
	}
	if j == i {
		return name
	}
	return name[:i] + name[j:]
}

// typeBits is the width of a register of type t, 0 if t is not a register type.
func typeBits(t string) int {
	switch t {
	case "b8", "u8", "s8":
		return 8
	case "b16", "u16", "s16", "f16", "bf16":
		return 16
	case "b32", "u32", "s32", "f32", "f16x2", "bf16x2":
		return 32
	case "b64", "u64", "s64", "f64":
		return 64
	}
	return 0
}

func (d *decoder) newSlot(w int) int {
	d.width = append(d.width, w)
	return len(d.width) - 1
}

func (d *decoder) constSlot(v uint64) int {
	if s, ok := d.consts[v]; ok {
		return s
	}
	s := d.newSlot(64)
	d.consts[v] = s
	d.fp.inits = append(d.fp.inits, slotInit{slot: s, kind: initConst, val: v})
	return s
}

var specialRegs = map[string]slotInit{
	"%tid.x": {kind: initTid, dim: 0}, "%tid.y": {kind: initTid, dim: 1}, "%tid.z": {kind: initTid, dim: 2},
	"%ntid.x": {kind: initNtid, dim: 0}, "%ntid.y": {kind: initNtid, dim: 1}, "%ntid.z": {kind: initNtid, dim: 2},
	"%ctaid.x": {kind: initCtaid, dim: 0}, "%ctaid.y": {kind: initCtaid, dim: 1}, "%ctaid.z": {kind: initCtaid, dim: 2},
	"%nctaid.x": {kind: initNctaid, dim: 0}, "%nctaid.y": {kind: initNctaid, dim: 1}, "%nctaid.z": {kind: initNctaid, dim: 2},
	"%laneid": {kind: initLaneid}, "%warpid": {kind: initWarpid},
}

// src resolves a source operand to a slot: a register, a special register or a
// constant (immediates and shared symbols).
func (d *decoder) src(o ptx.Operand) (int, error) {
	switch o := o.(type) {
	case ptx.Reg:
		if s, ok := d.regs[canonReg(string(o))]; ok {
			return s, nil
		}
		if s, ok := d.specs[string(o)]; ok {
			return s, nil
		}
		if si, ok := specialRegs[string(o)]; ok {
			si.slot = d.newSlot(32)
			d.specs[string(o)] = si.slot
			d.fp.inits = append(d.fp.inits, si)
			return si.slot, nil
		}
		if _, ok := d.preds[canonReg(string(o))]; ok {
			return 0, fmt.Errorf("predicate %s used as a value", o)
		}
		return 0, fmt.Errorf("undeclared register %s", o)
	case ptx.Imm:
		return d.constSlot(uint64(o)), nil
	case ptx.FImm:
		return d.constSlot(uint64(o)), nil
	case ptx.Sym:
		if off, ok := d.shared[string(o)]; ok {
			return d.constSlot(uint64(off)), nil
		}
		return 0, fmt.Errorf("symbol %s is not a shared array", o)
	}
	return 0, fmt.Errorf("operand %s is not a value", ptx.OperandString(o))
}

// dst resolves a destination register (the sink `_` gets a scratch slot).
func (d *decoder) dst(o ptx.Operand) (int, error) {
	switch o := o.(type) {
	case ptx.Reg:
		if s, ok := d.regs[canonReg(string(o))]; ok {
			return s, nil
		}
		if _, ok := d.preds[canonReg(string(o))]; ok {
			return 0, fmt.Errorf("predicate %s used as a value destination", o)
		}
		return 0, fmt.Errorf("undeclared destination register %s", o)
	case ptx.Sink:
		if d.sink < 0 {
			d.sink = d.newSlot(64)
		}
		return d.sink, nil
	}
	return 0, fmt.Errorf("destination %s is not a register", ptx.OperandString(o))
}

// pred resolves a predicate register; -1 for the sink.
func (d *decoder) pred(o ptx.Operand) (int, error) {
	switch o := o.(type) {
	case ptx.Reg:
		if p, ok := d.preds[canonReg(string(o))]; ok {
			return p, nil
		}
		return 0, fmt.Errorf("%s is not a declared predicate", o)
	case ptx.Sink:
		return -1, nil
	}
	return 0, fmt.Errorf("operand %s is not a predicate", ptx.OperandString(o))
}

func (d *decoder) isPred(o ptx.Operand) bool {
	r, ok := o.(ptx.Reg)
	if !ok {
		return false
	}
	_, ok = d.preds[canonReg(string(r))]
	return ok
}

// predPair resolves "p" or "p|q" (setp, shfl); q is -1 when absent or `_`.
func (d *decoder) predPair(o ptx.Operand) (p, q int, err error) {
	r, ok := o.(ptx.Reg)
	if !ok {
		p, err = d.pred(o)
		return p, -1, err
	}
	a, b, two := strings.Cut(string(r), "|")
	if p, err = d.pred(ptx.Reg(a)); err != nil {
		return
	}
	q = -1
	if two && b != "_" {
		q, err = d.pred(ptx.Reg(b))
	}
	return
}

// splitPair splits "d|p" for shfl.
func splitPair(o ptx.Operand) (ptx.Operand, ptx.Operand) {
	r, ok := o.(ptx.Reg)
	if !ok {
		return o, nil
	}
	a, b, two := strings.Cut(string(r), "|")
	if !two {
		return o, nil
	}
	var q ptx.Operand = ptx.Reg(b)
	if b == "_" {
		q = ptx.Sink{}
	}
	return ptx.Reg(a), q
}

// addr resolves an address operand to (base slot, offset). A parameter symbol gives
// param=true and the parameter index as base.
func (d *decoder) addr(o ptx.Operand) (base int, off int64, param bool, err error) {
	a, ok := o.(ptx.Addr)
	if !ok {
		return 0, 0, false, fmt.Errorf("operand %s is not an address", ptx.OperandString(o))
	}
	if s, ok := a.Base.(ptx.Sym); ok {
		if i, ok := d.params[string(s)]; ok {
			return i, a.Off, true, nil
		}
	}
	base, err = d.src(a.Base)
	return base, a.Off, false, err
}

func (d *decoder) paramSlot(i int) int {
	if s, ok := d.pslots[i]; ok {
		return s
	}
	s := d.newSlot(64)
	d.pslots[i] = s
	d.fp.inits = append(d.fp.inits, slotInit{slot: s, kind: initParam, dim: i})
	return s
}

// vecDst and vecSrc return the slots of a vector (or single) destination or
// source operand of n registers.
func (d *decoder) vecDst(o ptx.Operand, n int) ([]int, error) { return d.vecSlots(o, n, d.dst) }

func (d *decoder) vecSrc(o ptx.Operand, n int) ([]int, error) { return d.vecSlots(o, n, d.src) }

func (d *decoder) vecSlots(o ptx.Operand, n int, slot func(ptx.Operand) (int, error)) ([]int, error) {
	v, ok := o.(ptx.Vec)
	if !ok {
		v = ptx.Vec{o}
	}
	if len(v) != n {
		return nil, fmt.Errorf("operand %s: want %d registers", ptx.OperandString(o), n)
	}
	s := make([]int, n)
	for i, e := range v {
		var err error
		if s[i], err = slot(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// paramValues converts launch arguments to parameter bits.
func (fp *fprog) paramValues(args []any) ([]uint64, error) {
	ps := fp.fn.Params
	if len(args) != len(ps) {
		return nil, fmt.Errorf("emu: %s: %d arguments for %d parameters", fp.name, len(args), len(ps))
	}
	v := make([]uint64, len(ps))
	for i, p := range ps {
		bad := func() error {
			return fmt.Errorf("emu: %s: argument %d (%s .%s) has type %T", fp.name, i, p.Name, p.Type, args[i])
		}
		var u uint64
		w := typeBits(string(p.Type))
		switch a := args[i].(type) {
		case uint64:
			u = a
		case int64:
			u = uint64(a)
		case int:
			u = uint64(a)
			if w == 32 && int(int32(a)) != a && int(uint32(a)) != a {
				return nil, fmt.Errorf("emu: %s: argument %s = %d overflows .%s", fp.name, p.Name, a, p.Type)
			}
		case uint:
			u = uint64(a)
		case int32:
			u = uint64(uint32(a))
		case uint32:
			u = uint64(a)
		case float32:
			if p.Type != "f32" {
				return nil, bad()
			}
			u = uint64(math.Float32bits(a))
		case float64:
			if p.Type != "f64" {
				return nil, bad()
			}
			u = math.Float64bits(a)
		default:
			return nil, bad()
		}
		switch args[i].(type) {
		case uint64, int64:
			if w != 64 {
				return nil, bad()
			}
		case int32, uint32:
			if w != 32 || p.Type == "f32" {
				return nil, bad()
			}
		case int, uint:
			if w != 32 && w != 64 || p.Type == "f32" || p.Type == "f64" {
				return nil, bad()
			}
		}
		if w < 64 {
			u &= 1<<w - 1
		}
		v[i] = u
	}
	return v, nil
}

// ---- running ----

// runner holds the per-launch state reused from CTA to CTA.
type runner struct {
	fp     *fprog
	l      *Launch
	mem    *Memory
	params []uint64
	c      cta
	clock  uint32 // the largest warp clock so far, counted across the whole launch
	// ldmatrix matrices and wavefronts counted for Launch.Conflicts, added to it
	// once when the launch ends rather than atomically per instruction.
	matrices, wavefronts int64
	// workLeft is what Launch.Work leaves this launch, counted down per instruction.
	workLeft int64
}

func newRunner(fp *fprog, l *Launch, mem *Memory, params []uint64) *runner {
	r := &runner{fp: fp, l: l, mem: mem, params: params}
	c := &r.c
	c.fp, c.r, c.mem = fp, r, mem
	c.size = fp.static + l.SharedBytes
	c.smem = make([]byte, c.size)
	c.race = !l.NoRaceCheck
	c.uninit = !l.AllowUninit
	nw := (l.Block + 31) / 32
	c.nw = nw
	if c.race || c.uninit {
		c.shadow = make([]shadow, c.size)
	}
	if c.race {
		c.reads = make([]readRec, c.size*nw)
	}
	for i := range c.bars {
		c.bars[i].join = make([]uint32, nw)
	}
	if fp.usesAsync {
		c.pending = make([]uint64, (c.size+3)/4)
		c.pendBits = make([]uint64, (c.size+63)/64)
		c.async = make([]asyncQueue, l.Block)
	}
	for i := 0; i < nw; i++ {
		w := &warp{c: c, id: i, r: make([]uint64, fp.nslots*32), p: make([]uint32, fp.npred), vc: make([]uint32, nw)}
		c.warps = append(c.warps, w)
	}
	return r
}

// shadow is the race checker's record of the last write of one shared byte.
type shadow struct {
	wClk uint32 // the writer's warp clock at the write (below cta.start: not this CTA)
	wTid int32  // the writing thread
	wPC  int32  // the writing instruction
}

// readRec records, per shared byte and warp, that warp's latest reads: its clock
// then, the reading thread and a second thread of the same clock, -1 if none.
type readRec struct {
	clk       uint32
	tid, tid2 int32
	pc        int32 // tid's read
}

// barrier is one of the CTA's 16 named barriers in its current generation.
type barrier struct {
	expected int    // threads the generation waits for (set by the first arrival)
	arrived  int    // threads arrived, 32 per warp as the hardware counts
	warps    uint32 // warps arrived in this generation
	waiting  uint32 // of those, warps blocked in bar.sync
	pcs      [32]int32
	join     []uint32 // the clocks the arrivals released (race checker)
}

type cta struct {
	fp       *fprog
	r        *runner
	mem      *Memory
	id       [3]int
	size     int
	smem     []byte
	shadow   []shadow
	race     bool
	uninit   bool
	start    uint32 // every warp clock of this CTA starts here (older ones are earlier CTAs')
	reads    []readRec
	nw       int      // warps
	pending  []uint64 // per 4-byte granule: who issued the cp.async it awaits (valid where pendBits is set)
	pendBits []uint64 // per byte: awaiting a cp.async
	nAsync   int      // cp.async operations in flight in this CTA
	async    []asyncQueue
	warps    []*warp
	bars     [16]barrier
	gcache   *buffer
	steps    int64
}

func (r *runner) runCTA(id [3]int) error {
	c := &r.c
	fp := r.fp
	c.id = id
	clear(c.smem)
	r.clock++
	c.start = r.clock
	c.nAsync = 0
	clear(c.pendBits)
	for i := range c.async {
		c.async[i].reset()
	}
	for i := range c.bars {
		c.bars[i].reset()
	}
	c.steps = 0
	for _, w := range c.warps {
		clear(w.r)
		clear(w.p)
		for i := range w.vc {
			w.vc[i] = c.start
		}
		w.partial = w.partial[:0]
		w.pc, w.state = 0, running
		n := r.l.Block - w.id*32
		if n >= 32 {
			w.active = fullMask
		} else {
			w.active = 1<<n - 1
		}
		for _, si := range fp.inits {
			var v uint64
			s := w.slot(si.slot)
			switch si.kind {
			case initConst:
				v = si.val
			case initParam:
				v = r.params[si.dim]
			case initNtid:
				v = 1
				if si.dim == 0 {
					v = uint64(r.l.Block)
				}
			case initCtaid:
				v = uint64(id[si.dim])
			case initNctaid:
				v = uint64(r.l.Grid[si.dim])
			case initWarpid:
				v = uint64(w.id)
			case initTid:
				for l := range s {
					if si.dim == 0 {
						s[l] = uint64(w.id*32 + l)
					} else {
						s[l] = 0
					}
				}
				continue
			case initLaneid:
				for l := range s {
					s[l] = uint64(l)
				}
				continue
			}
			for l := range s {
				s[l] = v
			}
		}
	}
	for {
		ran := false
		for _, w := range c.warps {
			if w.state != running {
				continue
			}
			ran = true
			if err := w.run(); err != nil {
				return err
			}
		}
		if !ran {
			break
		}
	}
	// Every warp has exited or waits at a barrier.
	return c.finish()
}

// finish checks the barriers when no warp can run: a warp still waiting is a
// deadlock; a barrier that some warp arrived at but that never completed is an
// arrival nobody consumed (legal PTX, but a protocol bug in a generated kernel:
// an error unless Launch.Warn takes it).
func (c *cta) finish() error {
	fp := c.fp
	var waiting, partial []string
	var gone []int
	for _, w := range c.warps {
		switch w.state {
		case blocked:
			b := &c.bars[w.bar]
			in := &fp.code[w.barPC]
			waiting = append(waiting, fmt.Sprintf("warp %d at line %d `%s` waits at barrier %d (%d of %d threads arrived: warps %v)",
				w.id, fp.lines.line(in.src), in.text(), w.bar, b.arrived, b.expected, warpList(b.warps)))
		case exited:
			gone = append(gone, w.id)
		}
	}
	for id := range c.bars {
		b := &c.bars[id]
		if arrived := b.warps &^ b.waiting; arrived != 0 {
			partial = append(partial, fmt.Sprintf("barrier %d: %d of %d threads arrived (%s)",
				id, b.arrived, b.expected, c.arrivals(b, arrived)))
		}
	}
	e := c.warps[0].fault(nil, -1, "")
	e.Warp = -1
	switch {
	case len(waiting) > 0:
		e.Msg = "deadlock: " + strings.Join(waiting, "; ")
		if len(partial) > 0 {
			e.Msg += "; " + strings.Join(partial, "; ")
		}
		e.Msg += fmt.Sprintf("; exited warps %v", gone)
		return e
	case len(partial) > 0:
		e.Msg = "the CTA exits with a barrier partially arrived, an arrival no bar.sync consumed: " + strings.Join(partial, "; ")
		if c.r.l.Warn != nil {
			c.r.l.Warn(e)
			return nil
		}
		return e
	}
	return nil
}

// arrivals names the warps of mask that arrived at b and where.
func (c *cta) arrivals(b *barrier, mask uint32) string {
	var s []string
	for m := mask; m != 0; m &= m - 1 {
		w := bits.TrailingZeros32(m)
		in := &c.fp.code[b.pcs[w]]
		s = append(s, fmt.Sprintf("warp %d at line %d `%s`", w, c.fp.lines.line(in.src), in.text()))
	}
	return strings.Join(s, ", ")
}

// warpList spells a warp mask as [0 3 4].
func warpList(m uint32) string {
	var ids []int
	for ; m != 0; m &= m - 1 {
		ids = append(ids, bits.TrailingZeros32(m))
	}
	return fmt.Sprint(ids)
}

// tick advances the warp's own clock: its lanes synchronized.
func (w *warp) tick() {
	w.vc[w.id]++
	if r := w.c.r; w.vc[w.id] > r.clock {
		r.clock = w.vc[w.id]
	}
}

func (b *barrier) reset() {
	b.expected, b.arrived, b.warps, b.waiting = 0, 0, 0, 0
	clear(b.join)
}

// run executes the warp until it blocks at a barrier, exits or faults.
func (w *warp) run() error {
	code := w.c.fp.code
	limit := w.c.r.l.MaxWarpInstrs
	if limit == 0 {
		limit = DefaultMaxWarpInstrs
	}
	for w.state == running {
		if w.pc >= len(code) {
			w.active = 0
			w.state = exited
			break
		}
		in := &code[w.pc]
		w.pc++
		mask := w.active
		if in.guard >= 0 {
			g := w.p[in.guard]
			if in.neg {
				g = ^g
			}
			mask &= g
		}
		if mask == 0 {
			continue
		}
		if err := in.exec(w, mask); err != nil {
			return err
		}
		if wk := w.c.r.l.Work; wk != nil {
			if w.c.r.workLeft -= int64(in.cost); w.c.r.workLeft < 0 {
				e := w.fault(in, -1, "the emulation budget of %d units is spent (%d of them before this launch)", wk.Limit, wk.Used)
				return &WorkError{Kernel: e.Kernel, Limit: wk.Limit, Used: wk.Used, At: e}
			}
		}
		if limit > 0 {
			w.c.steps++
			if w.c.steps > limit {
				return w.fault(in, -1, "more than %d warp instructions executed in this CTA", limit)
			}
		}
	}
	return nil
}

// full checks that a collective runs with all 32 lanes of the warp.
func (w *warp) full(in *instr, mask uint32) error {
	if mask == fullMask {
		return nil
	}
	if w.active != fullMask {
		return w.fault(in, -1, "collective executed by a partial warp (active lanes %s)", laneList(w.active))
	}
	return w.fault(in, -1, "collective under a non-uniform guard (lanes %s execute, %s do not)",
		laneList(mask), laneList(w.active&^mask))
}

// uniform checks that an instruction required to be warp-uniform runs with every
// active lane.
func (w *warp) uniform(in *instr, mask uint32, what string) error {
	if mask == w.active {
		return nil
	}
	return w.fault(in, -1, "%s: guard is not uniform (lanes %s true, %s false)",
		what, laneList(mask), laneList(w.active&^mask))
}

// forLanes calls f for each lane in mask.
func forLanes(mask uint32, f func(l int)) {
	for m := mask; m != 0; m &= m - 1 {
		f(bits.TrailingZeros32(m))
	}
}
