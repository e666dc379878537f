package emu

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"

	"github.com/ptxgen/ptxgen/ptx"
)

func readLE(p []byte, n int) uint64 {
	switch n {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(p))
	case 4:
		return uint64(binary.LittleEndian.Uint32(p))
	}
	return binary.LittleEndian.Uint64(p)
}

func writeLE(p []byte, n int, v uint64) {
	switch n {
	case 1:
		p[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(p, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(p, uint32(v))
	default:
		binary.LittleEndian.PutUint64(p, v)
	}
}

// ---- access checks ----

// global returns the n bytes at addr after the alignment and bounds checks, and,
// for a store, the check that no parameter declared read-only points at them.
func (c *cta) global(w *warp, in *instr, lane int, addr uint64, n, align int, store bool) ([]byte, error) {
	if addr%uint64(align) != 0 {
		return nil, w.memFault(in, lane, "global", addr, "misaligned %d-byte access (needs %d-byte alignment)", n, align)
	}
	b := c.gcache
	if b == nil || addr < b.addr || addr+uint64(n) > b.addr+uint64(len(b.data)) {
		if b = c.mem.find(addr, n); b == nil {
			return nil, w.memFault(in, lane, "global", addr, "%d-byte access out of bounds: %s", n, c.mem.describe(addr))
		}
		c.gcache = b
	}
	if store && b.readBy != "" {
		return nil, w.memFault(in, lane, "global", addr, "store to buffer %q of read-only parameter %s (the kernel is not declared to write it)", b.name, b.readBy)
	}
	o := addr - b.addr
	return b.data[o : o+uint64(n) : o+uint64(n)], nil
}

// shared checks an n-byte access of shared memory at addr by lane: bounds,
// alignment, bytes still pending from cp.async, and the race and uninitialised-read
// checks. It returns the bytes.
func (c *cta) shared(w *warp, in *instr, lane int, addr uint64, n, align int, write bool) ([]byte, error) {
	if addr >= uint64(c.size) || addr+uint64(n) > uint64(c.size) {
		return nil, w.memFault(in, lane, "shared", addr, "%d-byte access out of bounds (shared window is %d bytes: %d static + %d dynamic)",
			n, c.size, c.fp.static, c.size-c.fp.static)
	}
	if addr%uint64(align) != 0 {
		return nil, w.memFault(in, lane, "shared", addr, "misaligned %d-byte access (needs %d-byte alignment)", n, align)
	}
	if c.nAsync > 0 && c.anyPending(addr, n) {
		i := c.firstPending(addr, n)
		verb := "read of"
		if write {
			verb = "write to"
		}
		return nil, w.memFault(in, lane, "shared", i, "%s a byte still pending from %s (missing cp.async.wait_group or bar.sync?)", verb, c.describePending(c.pending[i/4]))
	}
	if c.shadow != nil {
		if err := c.track(w, in, lane, addr, n, write, true); err != nil {
			return nil, err
		}
	}
	return c.smem[addr : addr+uint64(n) : addr+uint64(n)], nil
}

// anyPending reports whether any of the n bytes at addr awaits a cp.async.
func (c *cta) anyPending(addr uint64, n int) bool {
	for a, end := addr, addr+uint64(n); a < end; {
		b := a & 63
		k := min(64-b, end-a)
		if c.pendBits[a>>6]&(^uint64(0)>>(64-k)<<b) != 0 {
			return true
		}
		a += k
	}
	return false
}

// setPending marks or clears n bytes at addr.
func (c *cta) setPending(addr uint64, n int, on bool) {
	for a, end := addr, addr+uint64(n); a < end; {
		b := a & 63
		k := min(64-b, end-a)
		m := ^uint64(0) >> (64 - k) << b
		if on {
			c.pendBits[a>>6] |= m
		} else {
			c.pendBits[a>>6] &^= m
		}
		a += k
	}
}

func (c *cta) firstPending(addr uint64, n int) uint64 {
	for a := addr; a < addr+uint64(n); a++ {
		if c.pendBits[a>>6]>>(a&63)&1 != 0 {
			return a
		}
	}
	return addr
}

// describePending names the cp.async that made a byte pending (pending holds
// (pc+1)<<32 | tid+1 of its issue).
func (c *cta) describePending(t uint64) string {
	pc, tid := int(t>>32)-1, int(uint32(t))-1
	return fmt.Sprintf("`%s` issued by thread %d", c.fp.code[pc].text(), tid)
}

// track runs the race and uninitialised-read checks on n bytes at addr and, when
// record is set, records the access.
//
// Ordering is happens-before through barriers, by vector clocks: each warp w
// keeps vc[w][x], the latest clock of warp x it has synchronized with, and
// advances its own clock vc[w][w] whenever its lanes synchronize (every barrier
// arrival, bar.warp.sync of all its lanes). Arriving releases the warp's clocks
// into the barrier; a bar.sync that completes acquires what all arrivals
// released. An access by a thread of warp x at clock vc[x][x] is ordered after
// one by a thread of warp w at clock k when vc[x][w] > k (w == x included: its
// own clock moved on), so barriers between subsets of warps order exactly the
// warps they synchronize.
func (c *cta) track(w *warp, in *instr, lane int, addr uint64, n int, write, record bool) error {
	tid := int32(w.id*32 + lane)
	lo, hi := int(addr), int(addr)+n
	// The bytes of an access usually share one history (one access wrote them,
	// the same threads read them): check a run of equal records once.
	sh := c.shadow[lo:hi]
	for i := 0; i < len(sh); {
		j := i + 1
		for j < len(sh) && sh[j] == sh[i] {
			j++
		}
		if err := c.checkWrite(w, in, lane, addr+uint64(i), tid, &sh[i], write); err != nil {
			return err
		}
		i = j
	}
	if write {
		if c.race {
			for x := 0; x < c.nw; x++ {
				rs := c.reads[x*c.size+lo : x*c.size+hi]
				for i := 0; i < len(rs); {
					j := i + 1
					for j < len(rs) && rs[j] == rs[i] {
						j++
					}
					if err := c.checkRead(w, in, lane, addr+uint64(i), tid, x, &rs[i]); err != nil {
						return err
					}
					i = j
				}
			}
		}
		if record {
			c.recordWrite(lo, hi, w.id, tid, in.pc)
		}
		return nil
	}
	if c.race && record {
		// A read of this warp at an older clock is ordered before this one, so
		// whatever is ordered after this read is after that one too: one record
		// per warp suffices, with a second thread of the same interval.
		cur := w.vc[w.id]
		for i, rs := 0, c.reads[w.id*c.size+lo:w.id*c.size+hi]; i < len(rs); i++ {
			r := &rs[i]
			if r.clk != cur {
				*r = readRec{clk: cur, tid: tid, tid2: -1, pc: int32(in.pc)}
			} else if r.tid != tid && r.tid2 < 0 {
				r.tid2 = tid
			}
		}
	}
	return nil
}

// ordered reports whether an access by warp w at its clock k happened before
// what warp x does now.
func ordered(x *warp, w int, k uint32) bool { return x.vc[w] > k }

// reaches reports whether an access by warp w at clock k, ordered before what
// warp x does now, is ordered so as compute-sanitizer's racecheck sees it: once
// w has arrived at a named barrier of fewer threads than the CTA, racecheck
// orders w's later accesses before the accesses of warps outside that barrier
// only through w's next arrival at such a barrier (a CTA barrier alone does not
// do it; runs 53-54, scripts/proto/named_barrier_race.cu). PTX orders them by the
// CTA barrier; ptxgen's kernels keep to the stricter rule, so that the tool
// users run on them reports nothing.
func (c *cta) reaches(x *warp, w int, k uint32) bool {
	ps := c.warps[w].partial
	i := sort.Search(len(ps), func(i int) bool { return ps[i].clk > k })
	switch {
	case i == 0 || w == x.id:
		return true // w had not used a named barrier, or the same warp
	case ps[i-1].warps&(1<<x.id) != 0:
		return true // x took part in w's named barrier: the role's own warps
	case i == len(ps):
		return false
	}
	return x.vc[w] >= ps[i].clk
}

// namedBarrierNote explains a race that only the named-barrier rule finds.
const namedBarrierNote = "; warp %d had used a named barrier of fewer threads, so (as compute-sanitizer's racecheck orders it) " +
	"its access reaches warps outside that barrier only through its next arrival at one, not through a CTA barrier alone"

// checkWrite checks an access of the byte at addr against its last write e.
func (c *cta) checkWrite(w *warp, in *instr, lane int, addr uint64, tid int32, e *shadow, write bool) error {
	if e.wClk < c.start {
		if !write && c.uninit {
			return w.memFault(in, lane, "shared", addr, "read of a byte no thread of this CTA has written")
		}
		return nil
	}
	if !c.race || e.wTid == tid {
		return nil
	}
	wid := int(e.wTid) / 32
	note := ""
	if ordered(w, wid, e.wClk) {
		if c.reaches(w, wid, e.wClk) {
			return nil
		}
		note = fmt.Sprintf(namedBarrierNote, wid)
	}
	if write {
		return w.memFault(in, lane, "shared", addr,
			"data race: thread %d also wrote this byte with no bar.sync between (%s)%s", e.wTid, c.where("write", int(e.wPC)), note)
	}
	return w.memFault(in, lane, "shared", addr,
		"data race: thread %d wrote this byte with no bar.sync before this read (%s)%s", e.wTid, c.where("write", int(e.wPC)), note)
}

// where names the instruction at pc for an error: "the write: line 12 `...`".
func (c *cta) where(what string, pc int) string {
	in := &c.fp.code[pc]
	return fmt.Sprintf("the %s: line %d `%s`", what, c.fp.lines.line(in.src), in.text())
}

// checkRead checks a write of the byte at addr against warp x's reads r.
func (c *cta) checkRead(w *warp, in *instr, lane int, addr uint64, tid int32, x int, r *readRec) error {
	if r.clk < c.start {
		return nil
	}
	note := ""
	if ordered(w, x, r.clk) {
		if c.reaches(w, x, r.clk) {
			return nil
		}
		note = fmt.Sprintf(namedBarrierNote, x)
	}
	other := r.tid
	if other == tid {
		other = r.tid2
	}
	if other < 0 {
		return nil
	}
	msg := fmt.Sprintf("data race: thread %d read this byte with no bar.sync before this write", other)
	if other == r.tid {
		msg += " (" + c.where("read", int(r.pc)) + ")"
	}
	return w.memFault(in, lane, "shared", addr, "%s%s", msg, note)
}

// recordWrite makes thread tid of warp wid the last writer of bytes [lo, hi).
// Every read recorded there was checked to be ordered before this write, and any
// later access must be ordered after this write, so the reads are dropped.
func (c *cta) recordWrite(lo, hi, wid int, tid int32, pc int) {
	e := shadow{wClk: c.warps[wid].vc[wid], wTid: tid, wPC: int32(pc)}
	sh := c.shadow[lo:hi]
	for i := range sh {
		sh[i] = e
	}
	if c.race {
		for x := 0; x < c.nw; x++ {
			clear(c.reads[x*c.size+lo : x*c.size+hi])
		}
	}
}

// ---- ld / st ----

func (d *decoder) ldst(in *instr, m *mods) (execFn, error) {
	isLd := m.base == "ld"
	m.one("weak", "volatile", "relaxed")
	space := m.one("global", "shared", "shared::cta", "param", "local", "const")
	if space == "shared::cta" {
		space = "shared"
	}
	if space == "local" || space == "const" {
		return nil, fmt.Errorf(".%s is not supported", space)
	}
	nc := m.has("nc")
	if nc && (!isLd || space != "global") {
		return nil, fmt.Errorf(".nc needs ld.global")
	}
	m.one("ca", "cg", "cs", "lu", "cv", "wb", "wt")
	m.one("L2::64B", "L2::128B", "L2::256B")
	m.one("L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate")
	nv := map[string]int{"": 1, "v2": 2, "v4": 4}[m.one("v2", "v4")]
	t, err := m.typ()
	if err != nil {
		return nil, err
	}
	tw := typeBits(t)
	if tw == 0 {
		return nil, fmt.Errorf("type .%s not supported", t)
	}
	es := tw / 8
	signed := t == "s8" || t == "s16" || t == "s32"
	size := es * nv
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	// A load writes its first operand, a value; a store writes neither of its
	// operands, an address and a value.
	loads := writes(in.src, 0)
	valOp, addrOp := in.src.Args[0], in.src.Args[1]
	if !loads {
		valOp, addrOp = addrOp, valOp
	}
	base, off, isParam, err := d.addr(addrOp)
	if err != nil {
		return nil, err
	}
	if space == "param" {
		if !isLd || !isParam || off != 0 || nv != 1 {
			return nil, fmt.Errorf("only ld.param of a whole scalar kernel parameter is supported")
		}
		pt := d.ptype[base]
		if typeBits(string(pt)) != tw {
			return nil, fmt.Errorf("ld.param.%s of parameter %s of type .%s", t, ptx.OperandString(addrOp), pt)
		}
		dd, err := d.dst(valOp)
		if err != nil {
			return nil, err
		}
		ps := d.paramSlot(base)
		return exec1(dd, ps, func(x uint64) uint64 { return x }), nil
	}
	if isParam {
		return nil, fmt.Errorf("parameter %s addressed outside .param", ptx.OperandString(addrOp))
	}
	var regs []int
	if loads {
		regs, err = d.vecDst(valOp, nv)
	} else {
		regs, err = d.vecSrc(valOp, nv)
	}
	if err != nil {
		return nil, err
	}
	dmask := make([]uint64, nv)
	for i, r := range regs {
		dmask[i] = widthMask(d.width[r])
		if signed && d.width[r] < tw {
			return nil, fmt.Errorf("register narrower than .%s", t)
		}
	}
	uoff := uint64(off)
	access := func(w *warp, lane int, addr uint64) ([]byte, error) {
		c := w.c
		sp := space
		if sp == "" { // generic
			if addr-sharedGeneric < 1<<32 {
				addr -= sharedGeneric
				sp = "shared"
			} else {
				sp = "global"
			}
		}
		if sp == "shared" {
			return c.shared(w, in, lane, addr, size, size, !isLd)
		}
		return c.global(w, in, lane, addr, size, size, !isLd)
	}
	if isLd {
		return func(w *warp, mask uint32) error {
			A := w.slot(base)
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				p, err := access(w, l, A[l]+uoff)
				if err != nil {
					return err
				}
				for e, r := range regs {
					v := readLE(p[e*es:], es)
					if signed {
						v = uint64(sext(v, tw)) & dmask[e]
					}
					w.r[r*32+l] = v
				}
			}
			return nil
		}, nil
	}
	return func(w *warp, mask uint32) error {
		A := w.slot(base)
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			p, err := access(w, l, A[l]+uoff)
			if err != nil {
				return err
			}
			for e, r := range regs {
				writeLE(p[e*es:], es, w.r[r*32+l])
			}
		}
		return nil
	}, nil
}

// ---- cp.async ----

type asyncOp struct {
	dst   uint32
	n     uint8
	group int32
	pc    int32
	data  [16]byte
}

// asyncQueue is one thread's cp.async state: operations in issue order, each tagged
// with its group; group `next` is the open (uncommitted) one.
type asyncQueue struct {
	ops  []asyncOp
	head int
	next int32
}

func (q *asyncQueue) reset() { q.ops, q.head, q.next = q.ops[:0], 0, 0 }

// retire completes the operations of every group older than the newest keep groups.
func (c *cta) retire(q *asyncQueue, tid int, keep int32) {
	for q.head < len(q.ops) && q.ops[q.head].group < q.next-keep {
		op := &q.ops[q.head]
		q.head++
		a := uint64(op.dst)
		copy(c.smem[a:a+uint64(op.n)], op.data[:op.n])
		c.setPending(a, int(op.n), false)
		if c.shadow != nil {
			c.recordWrite(int(a), int(a)+int(op.n), tid/32, int32(tid), int(op.pc))
		}
		c.nAsync--
	}
	if q.head == len(q.ops) {
		q.ops, q.head = q.ops[:0], 0
	}
}

func (d *decoder) cpAsync(in *instr, m *mods) (execFn, error) {
	if !m.has("async") {
		return nil, fmt.Errorf("unknown instruction %s", in.src.Op)
	}
	d.fp.usesAsync = true
	args := in.src.Args
	switch {
	case m.has("commit_group"):
		if err := nargs(in.src); err != nil {
			return nil, err
		}
		return func(w *warp, mask uint32) error {
			for m := mask; m != 0; m &= m - 1 {
				w.c.async[w.id*32+bits.TrailingZeros32(m)].next++
			}
			return nil
		}, nil
	case m.has("wait_group"), m.has("wait_all"):
		if err := nargs(in.src); err != nil {
			return nil, err
		}
		keep := int32(0)
		all := len(args) == 0
		if !all {
			n, ok := args[0].(ptx.Imm)
			if !ok || n < 0 {
				return nil, fmt.Errorf("wait_group needs a non-negative immediate")
			}
			keep = int32(n)
		}
		return func(w *warp, mask uint32) error {
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				tid := w.id*32 + l
				q := &w.c.async[tid]
				if all {
					q.next++
				}
				w.c.retire(q, tid, keep)
			}
			return nil
		}, nil
	}
	m.one("ca", "cg")
	if m.one("shared", "shared::cta") == "" || !m.has("global") {
		return nil, fmt.Errorf("cp.async needs .shared.global")
	}
	m.one("L2::64B", "L2::128B", "L2::256B")
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dbase, doff, p1, err := d.addr(args[0])
	if err != nil {
		return nil, err
	}
	sbase, soff, p2, err := d.addr(args[1])
	if err != nil {
		return nil, err
	}
	if p1 || p2 {
		return nil, fmt.Errorf("cp.async on a parameter")
	}
	sz, ok := args[2].(ptx.Imm)
	if !ok || sz != 4 && sz != 8 && sz != 16 {
		return nil, fmt.Errorf("cp-size must be 4, 8 or 16")
	}
	if in.src.Op[:11] == "cp.async.cg" && sz != 16 {
		return nil, fmt.Errorf("cp.async.cg needs cp-size 16")
	}
	n := int(sz)
	srcSize, ignore := -1, -1
	if len(args) == 4 {
		if d.isPred(args[3]) {
			ignore, _ = d.pred(args[3])
		} else if srcSize, err = d.src(args[3]); err != nil {
			return nil, err
		}
	}
	pcTag := uint64(in.pc+1) << 32
	return func(w *warp, mask uint32) error {
		c := w.c
		D, S := w.slot(dbase), w.slot(sbase)
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			tid := w.id*32 + l
			dst := D[l] + uint64(doff)
			ss := n
			if srcSize >= 0 {
				v := uint32(w.r[srcSize*32+l])
				if v > uint32(n) {
					return w.memFault(in, l, "shared", dst, "src-size %d exceeds cp-size %d", v, n)
				}
				ss = int(v)
			}
			if ignore >= 0 && w.p[ignore]>>l&1 != 0 {
				ss = 0
			}
			if dst >= uint64(c.size) || dst+uint64(n) > uint64(c.size) {
				return w.memFault(in, l, "shared", dst, "cp.async destination out of bounds (shared window is %d bytes)", c.size)
			}
			if dst%uint64(n) != 0 {
				return w.memFault(in, l, "shared", dst, "misaligned cp.async destination (needs %d-byte alignment)", n)
			}
			if c.anyPending(dst, n) {
				i := c.firstPending(dst, n)
				return w.memFault(in, l, "shared", i, "cp.async to a byte still pending from %s", c.describePending(c.pending[i/4]))
			}
			if c.shadow != nil && c.race {
				if err := c.track(w, in, l, dst, n, true, false); err != nil {
					return err
				}
			}
			q := &c.async[tid]
			q.ops = append(q.ops, asyncOp{dst: uint32(dst), n: uint8(n), group: q.next, pc: int32(in.pc)})
			op := &q.ops[len(q.ops)-1]
			if ss > 0 {
				src := S[l] + uint64(soff)
				p, err := c.global(w, in, l, src, ss, n, false)
				if err != nil {
					q.ops = q.ops[:len(q.ops)-1]
					return err
				}
				copy(op.data[:], p)
			}
			tag := pcTag | uint64(tid+1)
			pd := c.pending[dst/4 : (dst+uint64(n))/4] // cp.async destinations are 4-byte granules
			for i := range pd {
				pd[i] = tag
			}
			c.setPending(dst, n, true)
			c.nAsync++
		}
		return nil
	}, nil
}

// ---- barriers ----

func (d *decoder) bar(in *instr, m *mods) (execFn, error) {
	args := in.src.Args
	if m.base == "bar" && m.has("warp") {
		if !m.has("sync") {
			return nil, fmt.Errorf("unknown instruction %s", in.src.Op)
		}
		if err := nargs(in.src); err != nil {
			return nil, err
		}
		ms, err := d.src(args[0])
		if err != nil {
			return nil, err
		}
		return func(w *warp, mask uint32) error {
			// Lanes run in lockstep here, so bar.warp.sync checks that the named
			// lanes all execute it and, when they are all the warp's live lanes,
			// orders their shared-memory accesses (race checker).
			M := w.slot(ms)
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				want := uint32(M[l])
				if want>>l&1 == 0 {
					return w.fault(in, l, "bar.warp.sync: lane not in its own membermask %#x", want)
				}
				if want&^mask != 0 {
					return w.fault(in, l, "bar.warp.sync: lanes %s named in the mask do not execute it", laneList(want&^mask))
				}
			}
			if uint32(M[bits.TrailingZeros32(mask)])&w.active == w.active {
				w.tick()
			}
			return nil
		}, nil
	}
	kind := m.one("sync", "arrive")
	if kind == "" {
		return nil, fmt.Errorf("unsupported barrier %s", in.src.Op)
	}
	m.has("aligned")
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	ida, err := d.src(args[0])
	if err != nil {
		return nil, err
	}
	cnt := -1
	if len(args) == 2 {
		if cnt, err = d.src(args[1]); err != nil {
			return nil, err
		}
	}
	return func(w *warp, mask uint32) error {
		c := w.c
		if mask != w.active {
			return w.uniform(in, mask, "bar")
		}
		id, err := w.uniformValue(in, ida, mask, "barrier id")
		if err != nil {
			return err
		}
		if id >= 16 {
			return w.fault(in, -1, "barrier id %d out of range (0..15)", id)
		}
		// The hardware counts warps: a warp's arrival is 32 threads whatever
		// lanes have exited. Without a count the barrier waits for every warp.
		want := 32 * c.nw
		if cnt >= 0 {
			n, err := w.uniformValue(in, cnt, mask, "thread count")
			if err != nil {
				return err
			}
			if n%32 != 0 || n == 0 || n > uint64(32*c.nw) {
				return w.fault(in, -1, "barrier %d: thread count %d, want a multiple of 32 in 32..%d (the CTA's %d warps)", id, int32(n), 32*c.nw, c.nw)
			}
			want = int(n)
		}
		b := &c.bars[id]
		bit := uint32(1) << w.id
		if b.warps&bit != 0 {
			first := &c.fp.code[b.pcs[w.id]]
			return w.fault(in, -1, "barrier %d: warp %d arrives again before the barrier completes (it arrived at line %d `%s`; %d of %d threads arrived: warps %v)",
				id, w.id, c.fp.lines.line(first.src), first.text(), b.arrived, b.expected, warpList(b.warps))
		}
		if b.warps == 0 {
			b.expected = want
		} else if b.expected != want {
			return w.fault(in, -1, "barrier %d: thread count %d, but this generation counts %d (%s)",
				id, want, b.expected, c.arrivals(b, b.warps))
		}
		b.warps |= bit
		b.pcs[w.id] = int32(in.pc)
		b.arrived += 32
		// Arriving releases what this warp did (and synchronizes its lanes).
		w.tick()
		for x, k := range w.vc {
			b.join[x] = max(b.join[x], k)
		}
		if want < 32*c.nw {
			w.partial = append(w.partial, partialArrival{clk: w.vc[w.id], warps: b.warps})
		}
		if kind == "sync" {
			b.waiting |= bit
		}
		if b.arrived < b.expected {
			if kind == "sync" {
				w.state, w.bar, w.barPC = blocked, int(id), in.pc
			}
			return nil
		}
		// Complete: the waiting warps acquire every arrival's release and run on;
		// the barrier starts its next generation.
		if want < 32*c.nw {
			for m := b.warps; m != 0; m &= m - 1 {
				o := c.warps[bits.TrailingZeros32(m)]
				o.partial[len(o.partial)-1].warps = b.warps
			}
		}
		for m := b.waiting; m != 0; m &= m - 1 {
			o := c.warps[bits.TrailingZeros32(m)]
			for x, k := range b.join {
				o.vc[x] = max(o.vc[x], k)
			}
			o.state = running
		}
		b.reset()
		return nil
	}, nil
}

// uniformValue is the value of slot s, which every lane of mask must agree on.
func (w *warp) uniformValue(in *instr, s int, mask uint32, what string) (uint64, error) {
	v := w.slot(s)
	l0 := bits.TrailingZeros32(mask)
	for m := mask; m != 0; m &= m - 1 {
		if l := bits.TrailingZeros32(m); uint32(v[l]) != uint32(v[l0]) {
			return 0, w.fault(in, l, "%s %d differs from lane %d's %d", what, uint32(v[l]), l0, uint32(v[l0]))
		}
	}
	return uint64(uint32(v[l0])), nil
}
