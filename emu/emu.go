package emu

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ptxgen/ptxgen/ptx"
)

// Launch describes one kernel launch.
type Launch struct {
	Grid        [3]int // CTAs per dimension; zero entries count as 1
	Block       int    // threads per CTA (1-D)
	SharedBytes int    // dynamic shared memory per CTA
	// Args are the kernel arguments in parameter order: a uint64 device address (or
	// int64/int/uint) for 64-bit parameters, int32/uint32 (or int) for 32-bit ones,
	// float32 for .f32 and float64 for .f64.
	Args []any

	NoRaceCheck bool // turn off the shared-memory race checker
	AllowUninit bool // allow reads of shared bytes not written in this CTA
	// MaxWarpInstrs bounds the warp instructions one CTA may execute, so that a
	// kernel that never terminates fails instead of hanging: 0 means
	// DefaultMaxWarpInstrs, a negative value means no limit.
	MaxWarpInstrs int64
	// Warn, if set, receives what is legal PTX but most likely a bug, instead of
	// the launch failing on it: a CTA that exits with a named barrier partially
	// arrived (a bar.arrive no bar.sync consumed).
	Warn func(*Error)
	// Conflicts, if set, receives the launch's ldmatrix bank-conflict counts (see
	// SharedConflicts); nil counts nothing.
	Conflicts *SharedConflicts
	// Work, if set, counts the launch's work and bounds it with the launches that
	// share it (see Work).
	Work *Work
}

// SharedConflicts counts the shared-memory wavefronts that ldmatrix reads take,
// under the bank model of the package documentation: Matrices is the 8x8 matrices
// read, which is the conflict-free number of wavefronts, and Wavefronts is what they
// took, so Wavefronts == Matrices means no bank conflict. A launch adds its counts
// when it ends (also when it fails), so one value may collect several launches,
// concurrent ones included. stmatrix is not counted.
type SharedConflicts struct {
	Matrices   atomic.Int64
	Wavefronts atomic.Int64
}

// String reports the counts and the excess wavefronts, for test failures.
func (s *SharedConflicts) String() string {
	m, w := s.Matrices.Load(), s.Wavefronts.Load()
	return fmt.Sprintf("%d ldmatrix matrices in %d wavefronts (%d extra from bank conflicts)", m, w, w-m)
}

// DefaultMaxWarpInstrs is the per-CTA instruction budget when Launch.MaxWarpInstrs
// is 0: about 50 times what one CTA of the MLA decode kernel executes, and around
// ten seconds of emulation.
const DefaultMaxWarpInstrs = 1 << 27

// Error is a runtime fault. It names the kernel, the instruction, the CTA and the
// thread and, for memory faults, the state space and address.
type Error struct {
	Kernel string
	Line   int    // line of the instruction in the printed module (Module.Print)
	Instr  string // the instruction text
	CTA    [3]int
	Thread int // thread index in the CTA, -1 when the fault is the warp's
	Warp   int
	Space  string // "global", "shared", "param" or "" when not a memory fault
	Addr   uint64
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "emu: %s", e.Kernel)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Instr != "" {
		fmt.Fprintf(&b, " `%s`", e.Instr)
	}
	fmt.Fprintf(&b, ": CTA (%d,%d,%d)", e.CTA[0], e.CTA[1], e.CTA[2])
	if e.Thread >= 0 {
		fmt.Fprintf(&b, " thread %d (warp %d lane %d)", e.Thread, e.Thread/32, e.Thread%32)
	} else if e.Warp >= 0 {
		fmt.Fprintf(&b, " warp %d", e.Warp)
	}
	if e.Space != "" {
		fmt.Fprintf(&b, " %s address %#x", e.Space, e.Addr)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// DecodeError reports an instruction the emulator cannot execute.
type DecodeError struct {
	Kernel string
	Line   int // line in the printed module
	Instr  string
	Msg    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("emu: %s:%d `%s`: %s", e.Kernel, e.Line, e.Instr, e.Msg)
}

// Program is a decoded module, ready to launch any of its kernels many times.
type Program struct {
	mod   *ptx.Module
	funcs map[string]*fprog
}

// Load decodes every kernel of mod once.
func Load(mod *ptx.Module) (*Program, error) {
	p := &Program{mod: mod, funcs: map[string]*fprog{}}
	lines := newLineMap(mod)
	for _, f := range mod.Funcs {
		fp, err := decodeFunc(mod, f, lines)
		if err != nil {
			return nil, err
		}
		p.funcs[f.Name] = fp
	}
	return p, nil
}

// Run decodes mod and launches entry.
func Run(mod *ptx.Module, entry string, l Launch, mem *Memory) error {
	p, err := Load(mod)
	if err != nil {
		return err
	}
	return p.Run(entry, l, mem)
}

// RunKernel launches a generated kernel with its own grid, block and shared size,
// after checking args against its parameter facts (kinds, pointer alignment and
// reach). A store to a buffer that a parameter not declared Written points at faults.
func RunKernel(k *ptx.Kernel, args []any, mem *Memory) error {
	return RunKernelOpts(k, args, mem, RunOptions{})
}

// RunKernelBudget is RunKernel with Launch.MaxWarpInstrs (0: the default), which
// bounds each CTA's work.
func RunKernelBudget(k *ptx.Kernel, args []any, mem *Memory, maxWarpInstrs int64) error {
	return RunKernelOpts(k, args, mem, RunOptions{MaxWarpInstrs: maxWarpInstrs})
}

// RunOptions are the Launch settings RunKernelOpts passes on; the zero value is
// RunKernel's behaviour.
type RunOptions struct {
	MaxWarpInstrs int64            // Launch.MaxWarpInstrs: 0 the default, negative no limit
	Conflicts     *SharedConflicts // Launch.Conflicts: nil counts nothing
	Work          *Work            // Launch.Work: nil counts nothing
}

// RunKernelOpts is RunKernel with the launch options o.
func RunKernelOpts(k *ptx.Kernel, args []any, mem *Memory, o RunOptions) error {
	if len(args) != len(k.Params) {
		return fmt.Errorf("emu: %s: %d arguments for %d parameters", k.Name, len(args), len(k.Params))
	}
	rows := 0
	if i := k.RowsParam(); i >= 0 {
		v, ok := args[i].(int32)
		if !ok {
			return fmt.Errorf("emu: %s: argument %d (%s, the rows of the call) is %T, want int32", k.Name, i, k.Params[i].Name, args[i])
		}
		if rows = int(v); rows < 0 || rows > k.MaxRows() {
			return fmt.Errorf("emu: %s: %d rows, want 0..%d (the capacity the kernel was generated for)", k.Name, rows, k.MaxRows())
		}
	}
	split := 1
	if i := k.SplitParamIndex(); i >= 0 {
		v, ok := args[i].(int32)
		if !ok {
			return fmt.Errorf("emu: %s: argument %d (the split) is %T, want int32", k.Name, i, args[i])
		}
		if split = int(v); split < 1 || split > k.MaxSplit() {
			return fmt.Errorf("emu: %s: split %d, want 1..%d", k.Name, split, k.MaxSplit())
		}
	}
	// Buffers of read-only parameters refuse stores while the launch runs (no copy
	// to compare afterwards: that doubled the memory of a large input).
	var readOnly []*buffer
	defer func() {
		for _, b := range readOnly {
			b.readBy = ""
		}
	}()
	for i, kp := range k.Params {
		switch kp.Kind {
		case "ptr":
			a, ok := args[i].(uint64)
			if !ok {
				return fmt.Errorf("emu: %s: argument %d (%s) is %T, want a uint64 device address", k.Name, i, kp.Name, args[i])
			}
			if kp.Align > 0 && a%uint64(kp.Align) != 0 {
				return fmt.Errorf("emu: %s: argument %s = %#x is not %d-byte aligned", k.Name, kp.Name, a, kp.Align)
			}
			n := int(kp.MinBytes(rows, split))
			if n == 0 {
				n = 1
			}
			b := mem.find(a, n)
			if b == nil {
				return fmt.Errorf("emu: %s: argument %s = %#x: %d bytes needed, %s", k.Name, kp.Name, a, kp.MinBytes(rows, split), mem.describe(a))
			}
			if !kp.Written && b.readBy == "" {
				b.readBy = kp.Name
				readOnly = append(readOnly, b)
			}
		case "i32", "i64", "f32":
		default:
			return fmt.Errorf("emu: %s: parameter %s has unknown kind %q", k.Name, kp.Name, kp.Kind)
		}
	}
	// Strided buffers: the stride arguments bounded by the buffers, as launchers do.
	value := func(name string) int64 {
		for i, kp := range k.Params {
			if kp.Name == name {
				switch v := args[i].(type) {
				case int32:
					return int64(v)
				case int64:
					return v
				}
			}
		}
		return 0
	}
	for i, kp := range k.Params {
		if kp.Run == 0 || kp.Kind != "ptr" {
			continue
		}
		need, err := kp.CheckStrides(value)
		if err != nil {
			return fmt.Errorf("emu: %s: argument %s: %v", k.Name, kp.Name, err)
		}
		if a := args[i].(uint64); need > 0 && mem.find(a, int(need)) == nil {
			return fmt.Errorf("emu: %s: argument %s = %#x: its strides reach %d bytes, %s", k.Name, kp.Name, a, need, mem.describe(a))
		}
	}
	grid := k.GridFor(rows, split)
	if grid[0] == 0 || grid[1] == 0 || grid[2] == 0 {
		return nil // a call with 0 rows does nothing
	}
	p, err := Load(k.Module)
	if err != nil {
		return err
	}
	l := Launch{Grid: grid, Block: k.Block, SharedBytes: k.SharedBytes, Args: args,
		MaxWarpInstrs: o.MaxWarpInstrs, Conflicts: o.Conflicts, Work: o.Work}
	return p.Run(k.Name, l, mem)
}

// Run launches entry. Global memory changes are left in mem, also when an error
// stops the launch.
func (p *Program) Run(entry string, l Launch, mem *Memory) error {
	fp, ok := p.funcs[entry]
	if !ok {
		return fmt.Errorf("emu: no kernel %q in the module", entry)
	}
	if mem == nil {
		mem = NewMemory()
	}
	for i := range l.Grid {
		if l.Grid[i] == 0 {
			l.Grid[i] = 1
		}
		if l.Grid[i] < 0 {
			return fmt.Errorf("emu: %s: bad grid %v", entry, l.Grid)
		}
	}
	if l.Block <= 0 || l.Block > 1024 {
		return fmt.Errorf("emu: %s: bad block size %d", entry, l.Block)
	}
	if fp.fn.ReqNTid > 0 && fp.fn.ReqNTid != l.Block {
		return fmt.Errorf("emu: %s: launched with %d threads, .reqntid is %d", entry, l.Block, fp.fn.ReqNTid)
	}
	if l.SharedBytes < 0 {
		return fmt.Errorf("emu: %s: negative shared size", entry)
	}
	params, err := fp.paramValues(l.Args)
	if err != nil {
		return err
	}
	r := newRunner(fp, &l, mem, params)
	if l.Conflicts != nil {
		defer func() {
			l.Conflicts.Matrices.Add(r.matrices)
			l.Conflicts.Wavefronts.Add(r.wavefronts)
		}()
	}
	if l.Work != nil {
		r.workLeft = l.Work.Limit - l.Work.Used
		start := r.workLeft
		defer func() { l.Work.Used += start - r.workLeft }()
	}
	ctas := l.Grid[0] * l.Grid[1] * l.Grid[2]
	for z := 0; z < l.Grid[2]; z++ {
		for y := 0; y < l.Grid[1]; y++ {
			for x := 0; x < l.Grid[0]; x++ {
				if err := r.runCTA([3]int{x, y, z}); err != nil {
					return err
				}
				if x+y+z == 0 && ctas > 1 && l.Work != nil {
					// The first CTA's work, times the CTAs: refuse a launch that
					// would pass the budget before running the rest of it.
					first := l.Work.Limit - l.Work.Used - r.workLeft
					if first > 0 && first > (l.Work.Limit-l.Work.Used)/int64(ctas) {
						return &WorkError{Kernel: entry, Limit: l.Work.Limit, Used: l.Work.Used, FirstCTA: first, CTAs: ctas}
					}
				}
			}
		}
	}
	return nil
}

// lineMap finds the line of each body statement in Print(mod), computed lazily (only
// errors need it).
type lineMap struct {
	mod   *ptx.Module
	once  sync.Once
	lines map[ptx.Stmt]int
}

func newLineMap(mod *ptx.Module) *lineMap { return &lineMap{mod: mod} }

func (lm *lineMap) line(s ptx.Stmt) int {
	lm.once.Do(func() {
		lm.lines = map[ptx.Stmt]int{}
		text := strings.Split(lm.mod.Print(), "\n")
		i := 0
		for _, f := range lm.mod.Funcs {
			head := ".visible .entry " + f.Name + "("
			for i < len(text) && text[i] != head {
				i++
			}
			for _, st := range f.Body {
				var want string
				switch st := st.(type) {
				case *ptx.Instr:
					want = "\t" + st.String()
				case *ptx.Label:
					want = st.Name + ":"
				case *ptx.Comment:
					want = "\t// " + st.Text
				}
				for i < len(text) && text[i] != want {
					i++
				}
				if i < len(text) {
					lm.lines[st] = i + 1
				}
			}
		}
	})
	return lm.lines[s]
}

const fullMask = ^uint32(0)

func laneList(m uint32) string {
	var b strings.Builder
	for m != 0 {
		l := bits.TrailingZeros32(m)
		m &= m - 1
		if b.Len() > 0 {
			b.WriteString(",")
		}
		fmt.Fprint(&b, l)
	}
	return "{" + b.String() + "}"
}
