package check

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/ptx"
)

// ProgramOptions say how to run a program of one's own (ptxgen check -emu -from):
// on seeded inputs, or on a kernel vector folder (golden.KernelVectorsFormat).
type ProgramOptions struct {
	Seed    uint64
	Vectors string
	// Args are scalar arguments by parameter name, as text (-args n=1000,alpha=0.5).
	Args map[string]string
	// MaxHostBytes bounds the host memory of the case (0: HostMemoryLimit).
	MaxHostBytes int64
	// IR is the program c was lowered from, if known: its loops and dots bound the
	// call's emulation work before the run (programWork).
	IR *ir.Program
	// MaxWork is the emulation budget in emu.Work units (0: MaxProgramWork).
	MaxWork int64
}

// MaxProgramCTAs bounds the CTAs of all the launches of an emulated program of one's
// own (its work: MaxProgramWork).
const MaxProgramCTAs = 1 << 16

// programBuffer is a buffer argument of a program: every kernel that takes the name
// shares it.
type programBuffer struct {
	name     string
	elem     string
	minBytes int64
	sized    bool // some kernel declares a size
	written  bool
	source   string // where minBytes comes from, for messages: "" (the IR), "-args"
}

// ForProgram builds the case of a compiled program of one's own. Its kernels run in
// order on one memory; kernels share an argument by name, and parameters named like
// a workspace buffer get that buffer, sized as the generated launcher allocates it
// (programWorkspace: for the capacity and the largest split, poisoned). The
// rows of the call default to the capacity and the split to its largest value; every
// other scalar comes from opts.Args or the folder's meta.json. Without a folder, read
// buffers get seeded values (floats in [-1, 1), integers in [0, 64), bytes anything)
// and written ones 0xFF bytes, and the case passes when the program runs without a
// fault the emulator detects; with one, the written buffers that have a
// NAME.want.f64 are compared with it. Bad arguments are *kernels.UsageError.
func ForProgram(c *lower.Compiled, opts ProgramOptions) (*Case, error) {
	bad := func(format string, args ...any) error {
		return &kernels.UsageError{Msg: "check -from: " + fmt.Sprintf(format, args...)}
	}
	workspace := map[string]bool{}
	for _, w := range c.Workspace {
		workspace[w.Name] = true
	}
	scalars := map[string]string{} // name -> kind
	var scalarNames []string
	buffers := map[string]*programBuffer{}
	var bufferNames []string
	rowsName, splitName := "", ""
	capacity, maxSplit := 0, 0
	for _, k := range c.Kernels {
		if r := k.RowsParam(); r >= 0 {
			rowsName, capacity = k.Params[r].Name, max(capacity, k.MaxRows())
		}
		if s := k.SplitParamIndex(); s >= 0 {
			splitName = k.Params[s].Name
			if maxSplit == 0 || k.MaxSplit() < maxSplit {
				maxSplit = k.MaxSplit()
			}
		}
		for _, p := range k.Params {
			switch {
			case workspace[p.Name]:
			case p.Kind != "ptr":
				if _, ok := scalars[p.Name]; !ok {
					scalars[p.Name] = p.Kind
					scalarNames = append(scalarNames, p.Name)
				}
			default:
				b := buffers[p.Name]
				if b == nil {
					b = &programBuffer{name: p.Name, elem: p.Elem}
					buffers[p.Name] = b
					bufferNames = append(bufferNames, p.Name)
				}
				b.written = b.written || p.Written
				b.sized = b.sized || p.Bytes > 0 || p.PerRow > 0 || p.PerPart > 0
			}
		}
	}
	var vec *golden.KernelVectors
	args := opts.Args
	if opts.Vectors != "" {
		if len(opts.Args) > 0 {
			return nil, bad("-args does not apply with -vectors (meta.json's args set the scalars)")
		}
		var err error
		if vec, err = golden.LoadKernelVectorsMeta(opts.Vectors); err != nil {
			return nil, &kernels.UsageError{Msg: err.Error()}
		}
		args = vec.Args
	}
	values := map[string]any{}
	sizes := map[string]int64{}
	for _, name := range slices.Sorted(mapKeys(args)) {
		if b := buffers[name]; b != nil {
			n, err := strconv.ParseInt(args[name], 10, 64)
			if err != nil || n < 1 {
				return nil, bad("argument %s = %q: %s is a buffer; its value is its size in bytes, want 1..%d", name, args[name], name, int64(math.MaxInt64))
			}
			sizes[name] = n
			continue
		}
		kind, ok := scalars[name]
		if !ok {
			return nil, bad("-args names %s, which is not a parameter (the scalars are: %s; a buffer's value is its size in bytes)", Shown(name), orNone(scalarNames))
		}
		v, err := parseScalar(kind, args[name])
		if err != nil {
			return nil, bad("argument %s = %q: %v", name, args[name], err)
		}
		values[name] = v
	}
	if _, ok := values[rowsName]; rowsName != "" && !ok {
		values[rowsName] = int32(capacity)
	}
	if _, ok := values[splitName]; splitName != "" && !ok {
		values[splitName] = int32(maxSplit)
	}
	var missing []string
	for _, n := range scalarNames {
		if _, ok := values[n]; !ok {
			missing = append(missing, scalars[n]+" "+n)
		}
	}
	if len(missing) > 0 {
		return nil, bad("give the scalar arguments %s with -args name=value,... (or a folder's meta.json args)", strings.Join(missing, ", "))
	}
	rows, split := 0, 1
	if rowsName != "" {
		rows = int(values[rowsName].(int32))
		if rows < 0 || rows > capacity {
			return nil, bad("%s = %d rows, want 0..%d (the capacity)", rowsName, rows, capacity)
		}
	}
	if splitName != "" {
		split = int(values[splitName].(int32))
		if split < 1 || split > maxSplit {
			return nil, bad("%s = %d (the split), want 1..%d", splitName, split, maxSplit)
		}
	}
	for _, k := range c.Kernels {
		for _, p := range k.Params {
			if b := buffers[p.Name]; b != nil {
				b.minBytes = max(b.minBytes, paramBytes(p, rows, split))
			}
		}
	}
	for n, size := range sizes {
		if b := buffers[n]; size < b.minBytes {
			return nil, bad("argument %s = %d bytes, less than the %d the kernels declare", n, size, b.minBytes)
		}
		buffers[n].minBytes, buffers[n].sized, buffers[n].source = size, true, "-args"
	}
	workspaces, err := programWorkspace(c)
	if err != nil {
		return nil, bad("%v", err)
	}
	ctas := 0
	ctasOf, grids := map[string]int64{}, map[string][3]int{}
	for _, k := range c.Kernels {
		g := k.GridFor(rows, split)
		ctas += g[0] * g[1] * g[2]
		if ctas > MaxProgramCTAs {
			return nil, bad("the program launches more than %d CTAs, the most the emulator runs (ptxgen-gpu runs larger ones)", MaxProgramCTAs)
		}
		ctasOf[k.Name], grids[k.Name] = int64(g[0]*g[1]*g[2]), g
	}
	budget := opts.MaxWork
	if budget <= 0 {
		budget = MaxProgramWork
	}
	bound := int64(0)
	if opts.IR != nil {
		w := programWork(opts.IR, values, ctasOf, grids)
		if w.units > budget {
			return nil, bad("the program needs at least %d units of emulation work (%s), more than the emulator's budget of %d (at most about half a minute; a unit is about one ALU warp instruction): run it on a GPU (ptxgen-gpu), or give it less work",
				w.units, w.what, budget)
		}
		bound = w.units
	}
	var kbufs []golden.KernelBuffer
	for _, n := range bufferNames {
		b := buffers[n]
		if !b.sized && !vectorFile(opts.Vectors, n) {
			return nil, bad("buffer parameter %s has no size in the IR: give its size in bytes with -args %s=BYTES (or bytes N in the IR, or a %s.bin in -vectors)", n, n, n)
		}
		kbufs = append(kbufs, golden.KernelBuffer{Name: n, ElemSize: elemSize(b.elem), MinBytes: b.minBytes, Written: b.written})
	}
	var files []golden.VectorFile
	if vec != nil {
		if files, err = vec.Files(opts.Vectors, kbufs); err != nil {
			return nil, &kernels.UsageError{Msg: err.Error()}
		}
	}
	// Every copy the check holds, before any is allocated: each buffer in the case
	// and in the emulator's memory; an expected output as read and the buffer decoded
	// to compare with it (float64 both).
	var need hostMemory
	for _, n := range bufferNames {
		b := buffers[n]
		size, source := max(b.minBytes, 1), b.source
		for _, f := range files {
			if f.Buffer.Name == n && !f.Want {
				size, source = f.Bytes, f.File
				buffers[n].minBytes = size
			}
		}
		need.add(n, size, 2, source)
	}
	for _, w := range workspaces {
		need.add(w.Name, w.Bytes, 2, "workspace")
	}
	for _, f := range files {
		if f.Want {
			need.add(f.File, f.Bytes, 2, "and the outputs decoded to compare")
		}
	}
	state, kernel, err := EmulatorStateBytes(c)
	if err != nil {
		return nil, err
	}
	need.add("the emulator's own state", state, 1, "kernel "+kernel)
	if err := need.check(opts.MaxHostBytes); err != nil {
		return nil, bad("%v", err)
	}
	if vec != nil {
		if err := vec.Read(opts.Vectors, files); err != nil {
			return nil, &kernels.UsageError{Msg: err.Error()}
		}
	}
	cs := &Case{Name: c.Program, Compiled: c, Buffers: map[string][]byte{}, Scalars: values, AdmittedBytes: need.total,
		MaxWork: budget, WorkBound: bound}
	for i, n := range bufferNames {
		b := buffers[n]
		switch {
		case vec != nil && vec.Buffers[n] != nil:
			cs.Buffers[n] = vec.Buffers[n]
		case b.written:
			cs.Buffers[n] = poison(max(b.minBytes, 1))
		default:
			cs.Buffers[n] = seeded(b.elem, max(b.minBytes, 1), opts.Seed, uint64(i))
		}
	}
	for _, w := range workspaces {
		cs.Buffers[w.Name] = poison(w.Bytes)
	}
	if vec == nil {
		cs.Name = fmt.Sprintf("%s on seeded inputs (seed %d", c.Program, opts.Seed)
		if rowsName != "" {
			cs.Name += fmt.Sprintf(", %d rows", rows)
		}
		if splitName != "" {
			cs.Name += fmt.Sprintf(", split %d", split)
		}
		cs.Name += ")"
		cs.Compare = func(map[string][]byte) []golden.Report {
			// Running is the check: a fault is an error of the executor.
			return []golden.Report{{Name: "ran clean: no out-of-bounds or misaligned access, no shared-memory race or read of unwritten shared memory, read-only buffers unchanged"}}
		}
		return cs, nil
	}
	cs.Name = fmt.Sprintf("%s on %s", c.Program, opts.Vectors)
	cs.Compare = func(final map[string][]byte) []golden.Report {
		var reps []golden.Report
		for _, n := range bufferNames {
			want, ok := vec.Want[n]
			if !ok {
				continue
			}
			got := decodeElems(buffers[n].elem, final[n])
			tol := defaultTolerance(buffers[n].elem)
			if vec.Tolerance != nil {
				tol = *vec.Tolerance
			}
			reps = append(reps, golden.Compare(n, got, want, []int{len(want)}, tol))
		}
		return reps
	}
	return cs, nil
}

// vectorFile reports whether a vector folder has NAME.bin.
func vectorFile(dir, name string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, name+".bin"))
	return err == nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Shown is s as an error message shows a value the user gave: as is, or quoted when
// it holds a space, a control character or what is not UTF-8, so that the message
// stays one line and says where the value ends.
func Shown(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// parseScalar reads an argument of a scalar kind.
func parseScalar(kind, s string) (any, error) {
	switch kind {
	case "i32":
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("want an i32 (%d..%d)", math.MinInt32, math.MaxInt32)
		}
		return int32(n), nil
	case "i64":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an i64")
		}
		return n, nil
	case "f32":
		f, err := strconv.ParseFloat(s, 64)
		if err == nil {
			err = kernels.CheckFloat32(f)
		}
		if err != nil {
			return nil, fmt.Errorf("want a finite f32")
		}
		return float32(f), nil
	}
	return nil, fmt.Errorf("parameters of kind %s are not supported", kind)
}

// elemSize is the bytes of one element of a buffer of elem.
func elemSize(elem string) int64 {
	switch elem {
	case "bf16", "f16":
		return 2
	case "f32", "i32":
		return 4
	case "i64":
		return 8
	}
	return 1
}

// seeded is n bytes of seeded values of elem: floats in [-1, 1), integers in
// [0, 64), any bytes for u8.
func seeded(elem string, n int64, seed, stream uint64) []byte {
	r := rand.New(rand.NewPCG(seed, stream))
	b := make([]byte, n)
	size := elemSize(elem)
	for i := int64(0); i+size <= n; i += size {
		f := r.Float64()*2 - 1
		switch elem {
		case "bf16":
			binary.LittleEndian.PutUint16(b[i:], uint16(dtype.BF16FromF64(f)))
		case "f16":
			binary.LittleEndian.PutUint16(b[i:], uint16(dtype.F16FromF32(float32(f))))
		case "f32":
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(f)))
		case "e4m3":
			b[i] = byte(dtype.E4M3FromF64(f))
		case "i32":
			binary.LittleEndian.PutUint32(b[i:], uint32(r.IntN(64)))
		case "i64":
			binary.LittleEndian.PutUint64(b[i:], uint64(r.IntN(64)))
		default:
			b[i] = byte(r.Uint32())
		}
	}
	return b
}

// decodeElems reads a buffer of elem as float64 values.
func decodeElems(elem string, b []byte) []float64 {
	size := elemSize(elem)
	out := make([]float64, int64(len(b))/size)
	for i := range out {
		p := b[int64(i)*size:]
		switch elem {
		case "bf16":
			out[i] = dtype.BF16(binary.LittleEndian.Uint16(p)).F64()
		case "f16":
			out[i] = dtype.F16(binary.LittleEndian.Uint16(p)).F64()
		case "f32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case "e4m3":
			out[i] = dtype.E4M3(p[0]).F64()
		case "i32":
			out[i] = float64(int32(binary.LittleEndian.Uint32(p)))
		case "i64":
			out[i] = float64(int64(binary.LittleEndian.Uint64(p)))
		default:
			out[i] = float64(p[0])
		}
	}
	return out
}

// defaultTolerance is about two units in the last place of a float type, exact for
// integers.
func defaultTolerance(elem string) golden.Tolerance {
	switch elem {
	case "f32":
		return golden.Tolerance{Abs: 1e-6, Rel: 0x1p-22}
	case "bf16":
		return golden.Tolerance{Abs: 1e-6, Rel: 0x1p-7}
	case "f16":
		return golden.Tolerance{Abs: 1e-6, Rel: 0x1p-10}
	case "e4m3":
		return golden.Tolerance{Abs: 0x1p-9, Rel: 0x1p-3}
	}
	return golden.Tolerance{}
}

// paramBytes is p.MinBytes(rows, split) saturating at math.MaxInt64: the IR's sizes
// are large enough for the product to wrap.
func paramBytes(p ptx.KParam, rows, split int) int64 {
	return satAdd(p.Bytes, satAdd(satMul(p.PerRow, int64(rows)), satMul(satMul(p.PerPart, int64(rows)), int64(split))))
}

// sizedWorkspace is a workspace buffer with the size the launcher allocates.
type sizedWorkspace struct {
	Name  string
	Bytes int64
	Why   string // how the size follows from the declaration, for messages
}

// programWorkspace sizes c's workspace buffers as the generated launcher allocates
// them (ptxgen gen -from): bytes plus perpart for each (row, chunk) pair of the
// largest launch, the capacity times the largest split of a split kernel, whatever
// the call's rows and split. A combine, which reads every chunk of a row but has no
// split of its own, declares its reach per row (perrow = perpart x the largest split)
// or fixed (bytes); every kernel's declaration at its capacity (and largest split)
// must fit the buffer, or the program could not run at its capacity: refused here,
// before a run.
func programWorkspace(c *lower.Compiled) ([]sizedWorkspace, error) {
	parts := int64(0)
	for _, k := range c.Kernels {
		if k.SplitParamIndex() >= 0 {
			parts = max(parts, satMul(int64(k.MaxRows()), int64(k.MaxSplit())))
		}
	}
	var out []sizedWorkspace
	for _, w := range c.Workspace {
		sw := sizedWorkspace{Name: w.Name, Bytes: w.Bytes, Why: fmt.Sprintf("bytes %d", w.Bytes)}
		if w.PerPart > 0 {
			sw.Bytes = satAdd(w.Bytes, satMul(w.PerPart, parts))
			sw.Why = fmt.Sprintf("bytes %d + perpart %d x %d parts, the capacity x the largest split", w.Bytes, w.PerPart, parts)
		}
		if sw.Bytes > ir.MaxWorkspaceBytes {
			return nil, fmt.Errorf("workspace %s: %d bytes (%s), more than %d", w.Name, sw.Bytes, sw.Why, int64(ir.MaxWorkspaceBytes))
		}
		for _, k := range c.Kernels {
			for _, p := range k.Params {
				if p.Name != w.Name {
					continue
				}
				rows, split := k.MaxRows(), 1
				if k.SplitParamIndex() >= 0 {
					split = k.MaxSplit()
				}
				if need := paramBytes(p, rows, split); need > sw.Bytes {
					return nil, fmt.Errorf("workspace %s is %d bytes (%s), but kernel %s declares %d bytes of its parameter %s at %d rows and split %d (bytes %d + perrow %d + perpart %d): declare at most the workspace (a combine: perrow = perpart x the largest split)",
						w.Name, sw.Bytes, sw.Why, k.Name, need, p.Name, rows, split, p.Bytes, p.PerRow, p.PerPart)
				}
			}
		}
		out = append(out, sw)
	}
	return out, nil
}

// satAdd and satMul are a+b and a*b for sizes (a, b >= 0), saturating at
// math.MaxInt64 instead of wrapping.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
