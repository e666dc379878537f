// Package gogen writes typed Go launchers for ptxgen kernel configurations: the Go file
// behind `ptxgen gen`, which downstream modules run through `go generate`.
//
// For one configuration (an ir.Program: kernels launched in order plus shared workspace)
// and a list of targets, Generate lowers the program for every target and returns one PTX
// file per target and one Go file that embeds them with //go:embed. The Go file holds, for
// a type name T:
//
//   - constants TField for every scalar field of the configuration struct (kernels.Config
//     Value: M, N, K, Out for gemm), and TParamBytes for the minimum size of every buffer
//     argument when it is the same on all targets;
//   - type T, a configuration loaded on one device, with NewT(dev) (picks the newest
//     generated target the device runs through runtime.Device.Pick, JIT-loads that
//     target's PTX through runtime.Device.LoadPTX, allocates the workspace), Launch with
//     one typed argument per caller parameter (*runtime.Buffer for pointers, int32, int64,
//     float32 ... for scalars), Target, Kernels and Close;
//   - unexported per-target tables (the embedded PTX and each kernel's launch facts as
//     ptx.Kernel literals), all named with T's unexported prefix (gemm for GEMM) so that
//     several generated files can share a package.
//
// Kernel parameters whose name is a workspace buffer's are bound to that buffer; all
// others are the caller's, in first-appearance order over the kernels, and a name that
// appears in several kernels is one argument. Launch checks every kernel's arguments
// against its launch facts (runtime.CheckArgs: buffer sizes, alignment, divisibility)
// before it launches the first, so a bad argument never leaves a half-run program.
//
// The generated code imports only ptxgen's runtime and ptx packages and the standard
// library, so it builds without cgo (through the runtime stub, where NewT returns
// runtime.ErrNoCUDA from the caller's runtime.Open) and runs on a GPU in `-tags cuda`
// builds. Output is deterministic: no maps are iterated, no time, no absolute paths.
package gogen

import (
	"fmt"
	"go/token"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Version is the generator version recorded in every generated file's header. It is a
// constant rather than the module version from debug.ReadBuildInfo so that `go run`,
// `go tool` and a built binary write the same bytes; bump it when the generated API or
// layout changes.
const Version = "0.3.0"

const (
	runtimePath = "github.com/ptxgen/ptxgen/runtime"
	ptxPath     = "github.com/ptxgen/ptxgen/ptx"
	planPath    = "github.com/ptxgen/ptxgen/plan"
)

// Options describe the Go file to write.
type Options struct {
	// Package is the Go package name of the generated file.
	Package string
	// Type names the generated type; "" derives it from the program name (TypeName).
	Type string
	// File is the base name of the Go file ("gemm_gen.go"). The PTX files are named after
	// it: FILE_TARGET.ptx ("gemm_gen_sm_90.ptx"), in the same directory. "" writes no Go
	// file (a manifest alone, whose name the PTX files then take).
	File string
	// Manifest is the base name of the launch manifest to write beside the PTX files
	// ("decode.json", see Manifest); "" writes none.
	Manifest string
	// Command is the command line recorded in the header; it must hold no absolute paths.
	Command string
	// Config is the configuration as flags ("-kernel gemm -m 128 ..."), for doc comments.
	Config string
	// Doc is a one-line description of the kernel family, for the type's doc comment.
	Doc string
	// Capacity says where the capacity (the most rows a call may have) is set, for the
	// launcher's messages: "" is -max-tokens, the built-in decode's flag; a program
	// from a file sets it in its grid (`%rows max N in FILE`).
	Capacity string
	// Shape is the validated configuration struct (kernels.Config.Value, e.g. a
	// kernels.GEMMConfig). Its scalar fields (integers, floats, bools, strings and
	// fmt.Stringers such as ir.Elem), nested structs flattened, become constants; other
	// fields are left out. nil generates no shape constants.
	Shape any
}

// File is one generated file, named relative to the Go file's directory.
type File struct {
	Name string
	Data []byte
}

// TypeName is the type name Generate uses when Options.Type is empty: the program name in
// Go's exported form (gemm: GEMM, mla_decode: MLADecode).
func TypeName(program string) string { return exportedName(program) }

// PTXName is the name of the PTX file for target beside the Go file goFile.
func PTXName(goFile, target string) string {
	return strings.TrimSuffix(goFile, ".go") + "_" + target + ".ptx"
}

// FileNameChars says which base names the generated files may have. The Go file names
// its PTX files in //go:embed lines, which take a glob pattern the go command also checks
// as a module path element, so only names that need no quoting or escaping there are used.
const FileNameChars = "ASCII letters, digits, '_', '-' and '.', starting with a letter or digit"

// CheckFileName reports whether base (a Go file or manifest name, without directory) is
// made of FileNameChars; the error says what is wrong with it.
func CheckFileName(base string) error {
	if base == "" {
		return fmt.Errorf("empty file name")
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		letterOrDigit := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if i == 0 && !letterOrDigit || !letterOrDigit && c != '_' && c != '-' && c != '.' {
			return fmt.Errorf("file name %q: byte %d (%q) is not one of %s", base, i, base[i:i+1], FileNameChars)
		}
	}
	return nil
}

// Generate builds cfg's program for every target (programs may differ per target: split
// counts, tiles), lowers it and returns the Go file followed by one PTX file per target,
// in the order of targets, and the manifest when Options.Manifest is set (see Render). Empty Options.Type, Config, Doc and Shape are filled in from
// the configuration.
func Generate(cfg kernels.Config, targets []target.Target, opt Options) ([]File, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("gogen: no targets")
	}
	var cs []*Compiled
	for _, t := range targets {
		p, err := cfg.Build(t)
		if err != nil {
			return nil, err
		}
		if opt.Type == "" {
			opt.Type = TypeName(p.Name)
		}
		if opt.Doc == "" {
			if s, err := kernels.Lookup(p.Name); err == nil {
				opt.Doc = s.Doc
			}
		}
		c, err := Compile(p, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		cs = append(cs, c)
	}
	if opt.Config == "" {
		opt.Config = strings.Join(cfg.Args(), " ")
	}
	if opt.Shape == nil {
		v, err := cfg.Value()
		if err != nil {
			return nil, err
		}
		opt.Shape = v
	}
	return Render(cs, opt)
}

// Compiled is a program lowered for one target, with its launch plan: the rule that
// chooses per call which kernels run (nil: every kernel runs, in order).
type Compiled struct {
	lower.Compiled
	Plan *plan.Rule
}

// Compile lowers p for t, its kernels placed in the launch sequences of its plan.
func Compile(p *plan.Program, t target.Target) (*Compiled, error) {
	c, err := lower.CompileProgram(p.Program, p.Sequences(), t)
	if err != nil {
		return nil, err
	}
	return &Compiled{Compiled: *c, Plan: p.Rule}, nil
}

// Render writes the Go file and the PTX files for a program already lowered for each
// target. Every target must have the same kernels, parameters and workspace buffers;
// launch facts (grid, shared memory, sizes) may differ.
//
// With Options.Manifest the manifest follows the PTX files; with an empty Options.File
// there is no Go file, and the PTX files are named after the manifest
// (MANIFEST_TARGET.ptx for MANIFEST.json).
func Render(cs []*Compiled, opt Options) ([]File, error) {
	if opt.File == "" && opt.Manifest == "" {
		return nil, fmt.Errorf("gogen: neither a Go file nor a manifest to write")
	}
	for _, n := range []string{opt.File, opt.Manifest} {
		if err := CheckFileName(n); n != "" && err != nil {
			return nil, fmt.Errorf("gogen: %w", err)
		}
	}
	ptxBase := opt.File
	if ptxBase == "" {
		if !strings.HasSuffix(opt.Manifest, ".json") {
			return nil, fmt.Errorf("gogen: manifest name %q must end in .json", opt.Manifest)
		}
		ptxBase = strings.TrimSuffix(opt.Manifest, ".json") + ".go"
	}
	// Every module written is one ptx.ValidateModule accepts: lower.CompileProgram
	// validates what it returns, but a Compiled may have been changed since.
	for _, c := range cs {
		if c.Module == nil {
			return nil, fmt.Errorf("gogen: %s: no PTX module", isa(c))
		}
		if err := ptx.ValidateModule(c.Module); err != nil {
			return nil, fmt.Errorf("gogen: %s: the generated PTX does not validate (a ptxgen bug): %w", isa(c), err)
		}
	}
	ptxFile := func(target string) string { return PTXName(ptxBase, target) }
	var files []File
	if opt.File != "" {
		m, err := newModel(cs, opt)
		if err != nil {
			return nil, err
		}
		goSrc, err := m.render()
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: opt.File, Data: goSrc})
	}
	for _, c := range cs {
		files = append(files, File{Name: ptxFile(isa(c)), Data: []byte(c.Module.Print())})
	}
	if opt.Manifest != "" {
		data, err := RenderManifest(cs, opt, ptxFile)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: opt.Manifest, Data: data})
	}
	return files, nil
}

// param is one of Launch's arguments: a kernel parameter that is not workspace.
type param struct {
	name    string // as in the IR and ptx.KParam
	ident   string // Go identifier in Launch
	kind    string // ptx.KParam.Kind
	elem    string
	written bool
	bytes   []int64 // per target, the most any kernel may access (without the rows)
	perRow  []int64 // per target, the most bytes per row of the call any kernel may access
	rows    bool    // the rows of the call: Launch takes an int, the kernels an i32
	align   []int   // per target, the strictest alignment or divisor any kernel needs
}

type model struct {
	opt    Options
	cs     []*Compiled
	typ    string // exported type
	pre    string // unexported prefix
	recv   string // receiver name
	params []*param
	// bind holds, per target, per kernel, per parameter, the index of its argument in
	// Launch's arguments followed by the workspace buffers and, with a launch plan, the
	// split it chose.
	bind    [][][]int
	planned bool              // the programs have launch plans (all targets or none)
	idents  map[string]string // package-level identifiers generated, for collisions
}

func newModel(cs []*Compiled, opt Options) (*model, error) {
	if len(cs) == 0 {
		return nil, fmt.Errorf("gogen: no targets")
	}
	if !token.IsIdentifier(opt.Package) || opt.Package == "_" {
		return nil, fmt.Errorf("gogen: package name %q is not a Go identifier", opt.Package)
	}
	if !isExportedIdent(opt.Type) {
		return nil, fmt.Errorf("gogen: type name %q is not an exported Go identifier", opt.Type)
	}
	if !strings.HasSuffix(opt.File, ".go") {
		return nil, fmt.Errorf("gogen: file name %q must end in .go", opt.File)
	}
	m := &model{opt: opt, cs: cs, typ: opt.Type, pre: unexportedPrefix(opt.Type), idents: map[string]string{}}
	m.recv = receiverName(m.typ, m.pre)
	seen := map[string]bool{}
	pIndex := map[string]int{}
	for t, c := range cs {
		if seen[isa(c)] {
			return nil, fmt.Errorf("gogen: target %s given twice", isa(c))
		}
		seen[isa(c)] = true
		if len(c.Kernels) == 0 {
			return nil, fmt.Errorf("gogen: %s: program has no kernels", isa(c))
		}
		if t > 0 && (c.Plan != nil) != m.planned {
			return nil, fmt.Errorf("gogen: %s has a launch plan and %s has not, or the reverse", isa(c), isa(cs[0]))
		}
		m.planned = c.Plan != nil
		wsIndex := map[string]int{}
		for i, w := range c.Workspace {
			if _, dup := wsIndex[w.Name]; dup {
				return nil, fmt.Errorf("gogen: %s: workspace buffer %s declared twice", isa(c), w.Name)
			}
			wsIndex[w.Name] = i
		}
		// Launch's parameters are the first target's; every other target must take the
		// same ones (the order in which its kernels name them may differ).
		mine := map[string]bool{}
		for _, k := range c.Kernels {
			for j, kp := range k.Params {
				if _, ok := wsIndex[kp.Name]; ok {
					if kp.Kind != "ptr" {
						return nil, fmt.Errorf("gogen: %s: kernel %s: parameter %s names a workspace buffer but is a %s, not a pointer", isa(c), k.Name, kp.Name, kp.Kind)
					}
					continue
				}
				if j == k.SplitParamIndex() && c.Plan != nil {
					if kp.Kind != "i32" {
						return nil, fmt.Errorf("gogen: %s: kernel %s: the plan's %s is a %s, want i32", isa(c), k.Name, kp.Name, kp.Kind)
					}
					continue // the plan's, not the caller's
				}
				if goType(kp.Kind) == "" {
					return nil, fmt.Errorf("gogen: %s: kernel %s: parameter %s has kind %q, which has no Go type", isa(c), k.Name, kp.Name, kp.Kind)
				}
				i, ok := pIndex[kp.Name]
				if !ok {
					if t > 0 {
						return nil, fmt.Errorf("gogen: kernel %s takes %s on %s, which %s does not take", k.Name, kp.Name, isa(c), isa(cs[0]))
					}
					i = len(m.params)
					pIndex[kp.Name] = i
					m.params = append(m.params, &param{name: kp.Name, kind: kp.Kind, elem: kp.Elem,
						bytes: make([]int64, len(cs)), perRow: make([]int64, len(cs)), align: make([]int, len(cs))})
				}
				p := m.params[i]
				if p.kind != kp.Kind || p.elem != kp.Elem {
					return nil, fmt.Errorf("gogen: parameter %s is %s in kernel %s (%s) but %s elsewhere", kp.Name, kindDesc(kp.Kind, kp.Elem), k.Name, isa(c), kindDesc(p.kind, p.elem))
				}
				mine[kp.Name] = true
				p.bytes[t] = max(p.bytes[t], kp.Bytes)
				p.perRow[t] = max(p.perRow[t], kp.PerRow)
				if r := k.RowsParam(); r >= 0 && k.Params[r].Name == kp.Name {
					p.rows = true
				}
				p.align[t] = max(p.align[t], kp.Align)
				p.written = p.written || kp.Written
			}
		}
		for _, p := range m.params {
			if !mine[p.name] {
				return nil, fmt.Errorf("gogen: no kernel takes %s on %s, but %s does", p.name, isa(c), isa(cs[0]))
			}
		}
		var bind [][]int
		for _, k := range c.Kernels {
			var b []int
			for j, kp := range k.Params {
				if w, ok := wsIndex[kp.Name]; ok {
					b = append(b, len(pIndex)+w)
				} else if j == k.SplitParamIndex() && c.Plan != nil {
					b = append(b, len(pIndex)+len(c.Workspace))
				} else {
					b = append(b, pIndex[kp.Name])
				}
			}
			bind = append(bind, b)
		}
		m.bind = append(m.bind, bind)
	}
	if err := m.nameParams(); err != nil {
		return nil, err
	}
	return m, nil
}

// bodyLocals are the local names the generated methods use; the receiver avoids them.
var bodyLocals = map[string]bool{"all": true, "args": true, "caller": true, "j": true, "b": true, "buf": true, "c": true, "dev": true,
	"err": true, "errs": true, "facts": true, "i": true, "k": true, "mod": true, "n": true,
	"target": true, "targets": true, "parts": true, "w": true, "ch": true, "order": true, "name": true, "rows": true,
	"stream": true}

// receiverName is the first letter of the type in lower case (g for GEMM), or a longer
// name where that letter is one of the methods' local names.
func receiverName(typ, pre string) string {
	first, _ := utf8.DecodeRuneInString(typ) // a letter, not its first byte: Ünï gives ü
	for _, r := range []string{strings.ToLower(string(first)), pre, "the" + typ} {
		if !bodyLocals[r] && !token.IsKeyword(r) && !predeclared[r] {
			return r
		}
	}
	return "the" + typ
}

// nameParams picks Launch's parameter identifiers: the IR names in Go's form, renamed
// (with an Arg suffix) where they would hide the receiver, an import, a keyword or a
// predeclared identifier.
func (m *model) nameParams() error {
	reserved := map[string]bool{m.recv: true, "runtime": true, "ptx": true, "fmt": true, "errors": true, "stream": true}
	used := map[string]string{}
	for _, p := range m.params {
		id := localName(p.name)
		if id == "" || !token.IsIdentifier(id) && !token.IsKeyword(id) {
			return fmt.Errorf("gogen: parameter name %q has no Go form", p.name)
		}
		if reserved[id] || token.IsKeyword(id) || predeclared[id] {
			id += "Arg"
		}
		if other, ok := used[id]; ok {
			return fmt.Errorf("gogen: parameters %s and %s would both be called %s in Go", other, p.name, id)
		}
		used[id] = p.name
		p.ident = id
	}
	return nil
}

// declare records a package-level identifier and reports a clash with an earlier one.
func (m *model) declare(id, what string) error {
	if other, ok := m.idents[id]; ok {
		return fmt.Errorf("gogen: %s and %s would both be called %s", other, what, id)
	}
	m.idents[id] = what
	return nil
}

// goType is the Go type of a scalar kind, or *runtime.Buffer's marker "ptr".
func goType(kind string) string {
	switch kind {
	case "ptr":
		return "ptr"
	case "i32":
		return "int32"
	case "u32":
		return "uint32"
	case "i64":
		return "int64"
	case "u64":
		return "uint64"
	case "f32":
		return "float32"
	case "f64":
		return "float64"
	}
	return ""
}

// argFunc is the runtime constructor of an argument of this kind.
func argFunc(kind string) string {
	if kind == "ptr" {
		return "Ptr"
	}
	return strings.ToUpper(kind)
}

func kindDesc(kind, elem string) string {
	if kind == "ptr" {
		return "a pointer to " + elem
	}
	return kind
}

// perTarget renders a value that may differ between targets: once when it does not,
// else per target ("4096 (sm_120), 8192 (sm_90)").
func (m *model) perTarget(vals []string, sep ...string) string {
	same := true
	for _, v := range vals {
		same = same && v == vals[0]
	}
	if same {
		return vals[0]
	}
	var parts []string
	for i, v := range vals {
		parts = append(parts, fmt.Sprintf("%s (%s)", v, isa(m.cs[i])))
	}
	if len(sep) > 0 {
		return strings.Join(parts, sep[0])
	}
	return strings.Join(parts, ", ")
}

// describe is a parameter's line in Launch's doc comment.
func (m *model) describe(p *param) string {
	if p.rows {
		return "the rows of the call, 0..MaxRows() (0 launches nothing)"
	}
	if p.kind != "ptr" {
		s := goType(p.kind)
		var div []string
		some := false
		for _, a := range p.align {
			div = append(div, strconv.Itoa(a))
			some = some || a > 1
		}
		if some {
			s += ", a multiple of " + m.perTarget(div)
		}
		if of := m.strideOf(p.name); of != "" {
			s += ", a stride of " + of + " in elements, checked against " + of + "'s size"
		}
		return s
	}
	s := p.elem + " buffer, "
	if p.written {
		s += "written"
	} else {
		s += "read"
	}
	var sizes, aligns []string
	anySize, anyAlign := false, false
	for t := range m.cs {
		sizes = append(sizes, bytesFormula(p.bytes[t], p.perRow[t]))
		aligns = append(aligns, strconv.Itoa(p.align[t]))
		anySize = anySize || p.bytes[t] > 0 || p.perRow[t] > 0
		anyAlign = anyAlign || p.align[t] > 1
	}
	if anySize {
		s += ", at least " + m.perTarget(sizes) + " bytes"
	}
	if anyAlign {
		s += ", " + m.perTarget(aligns) + "-byte aligned"
	}
	return s
}

// strideOf names the pointer parameter whose stride the parameter name is, "" when
// it is none's.
func (m *model) strideOf(name string) string {
	for _, c := range m.cs {
		for _, k := range c.Kernels {
			for _, kp := range k.Params {
				for _, d := range kp.Strides {
					if d.Stride == name {
						return localName(kp.Name)
					}
				}
			}
		}
	}
	return ""
}

// bytesFormula renders a minimum size: "4096", "512 x rows" or "512 x rows + 64".
func bytesFormula(bytes, perRow int64) string {
	switch {
	case perRow == 0:
		return strconv.FormatInt(bytes, 10)
	case bytes == 0:
		return fmt.Sprintf("%d x rows", perRow)
	}
	return fmt.Sprintf("%d x rows + %d", perRow, bytes)
}

// doc renders doc comment lines as one raw comment ("" is an empty comment line).
func doc(lines ...string) *jen.Statement {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if l == "" {
			b.WriteString("//")
		} else {
			b.WriteString("// " + l)
		}
	}
	return jen.Comment(b.String())
}

// wrap breaks text into comment lines of at most about 90 columns.
func wrap(text string) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > 90 {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

func (m *model) targetList() string {
	var ts []string
	for _, c := range m.cs {
		ts = append(ts, isa(c))
	}
	return strings.Join(ts, ", ")
}

// kernelList names the kernels in launch order, per target where they differ.
func (m *model) kernelList() string {
	var ks []string
	for _, c := range m.cs {
		var names []string
		for _, k := range c.Kernels {
			names = append(names, k.Name)
		}
		ks = append(ks, strings.Join(names, ", "))
	}
	return m.perTarget(ks, "; ")
}

// workspaceList names the workspace buffers, per target where they differ; "" for none.
func (m *model) workspaceList() string {
	var ws []string
	some := false
	for _, c := range m.cs {
		var names []string
		for _, w := range c.Workspace {
			names = append(names, w.Name)
		}
		if len(names) == 0 {
			names = []string{"none"}
		} else {
			some = true
		}
		ws = append(ws, strings.Join(names, ", "))
	}
	if !some {
		return ""
	}
	return m.perTarget(ws, "; ")
}

// shapeConst is one configuration field as a constant.
type shapeConst struct {
	field string // Go path in the configuration struct, "M" or "Seg0.K"
	ident string
	value jen.Code
}

// shapeConsts flattens the configuration's scalar values into constants: struct fields
// by name (anonymous ones without), slice and array elements by index (Segments[1].K).
func shapeConsts(v reflect.Value, path string, out *[]shapeConst) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	add := func(c jen.Code) { *out = append(*out, shapeConst{field: path, value: c}) }
	if s, ok := v.Interface().(fmt.Stringer); ok && v.Kind() != reflect.Struct && path != "" {
		add(jen.Lit(s.String())) // ir.Elem: "bf16"
		return
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		add(jen.Op(strconv.FormatInt(v.Int(), 10)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		add(jen.Op(strconv.FormatUint(v.Uint(), 10)))
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return // no constant can hold it
		}
		lit := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(lit, ".e") {
			lit += ".0" // keep it a float constant
		}
		add(jen.Op(lit))
	case reflect.Bool:
		add(jen.Lit(v.Bool()))
	case reflect.String:
		add(jen.Lit(v.String()))
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			shapeConsts(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			p := path
			if !f.Anonymous {
				if p != "" {
					p += "."
				}
				p += f.Name
			}
			shapeConsts(v.Field(i), p, out)
		}
	}
}

// ptxVar names the string the PTX for target is embedded in.
func (m *model) ptxVar(target string) string {
	return m.pre + "PTX" + strings.ReplaceAll(target, "_", "")
}

// factsLit renders a kernel's launch facts (without the module) as a ptx.Kernel literal.
func factsLit(k *ptx.Kernel) jen.Code {
	var params []jen.Code
	for _, p := range k.Params {
		fields := []jen.Code{
			jen.Id("Name").Op(":").Lit(p.Name),
			jen.Id("Kind").Op(":").Lit(p.Kind),
		}
		if p.Elem != "" {
			fields = append(fields, jen.Id("Elem").Op(":").Lit(p.Elem))
		}
		if p.Bytes != 0 {
			fields = append(fields, jen.Id("Bytes").Op(":").Op(strconv.FormatInt(p.Bytes, 10)))
		}
		if p.PerRow != 0 {
			fields = append(fields, jen.Id("PerRow").Op(":").Op(strconv.FormatInt(p.PerRow, 10)))
		}
		if p.Align != 0 {
			fields = append(fields, jen.Id("Align").Op(":").Lit(p.Align))
		}
		if p.Written {
			fields = append(fields, jen.Id("Written").Op(":").True())
		}
		if p.Run != 0 {
			fields = append(fields, jen.Id("Run").Op(":").Op(strconv.FormatInt(p.Run, 10)))
			var dims []jen.Code
			for _, d := range p.Strides {
				df := []jen.Code{jen.Id("Stride").Op(":").Lit(d.Stride)}
				if d.Count != 0 {
					df = append(df, jen.Id("Count").Op(":").Op(strconv.FormatInt(d.Count, 10)))
				}
				if d.CountParam != "" {
					df = append(df, jen.Id("CountParam").Op(":").Lit(d.CountParam), jen.Id("CountDiv").Op(":").Op(strconv.FormatInt(d.CountDiv, 10)))
				}
				dims = append(dims, jen.Values(df...))
			}
			fields = append(fields, jen.Id("Strides").Op(":").Index().Qual(ptxPath, "StrideDim").Values(dims...))
		}
		params = append(params, jen.Values(fields...))
	}
	fields := []jen.Code{
		jen.Id("Name").Op(":").Lit(k.Name),
		jen.Id("Grid").Op(":").Index(jen.Lit(3)).Int().Values(jen.Lit(k.Grid[0]), jen.Lit(k.Grid[1]), jen.Lit(k.Grid[2])),
	}
	if k.GridParam != [3]string{} {
		fields = append(fields, jen.Id("GridParam").Op(":").Index(jen.Lit(3)).String().Values(jen.Lit(k.GridParam[0]), jen.Lit(k.GridParam[1]), jen.Lit(k.GridParam[2])))
	}
	fields = append(fields,
		jen.Id("Block").Op(":").Lit(k.Block),
		jen.Id("SharedBytes").Op(":").Lit(k.SharedBytes),
		jen.Id("Params").Op(":").Index().Qual(ptxPath, "KParam").Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, params...),
	)
	if k.Programmatic {
		fields = append(fields, jen.Id("Programmatic").Op(":").True())
	}
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, fields...)
}

// isa is the target a compiled program's PTX is for: its module's .target (the
// target's name, also when it was planned under another's limits).
func isa(c *Compiled) string {
	if c.Module != nil {
		return c.Module.Target
	}
	return c.Target.Name
}
