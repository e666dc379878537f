package gogen

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// config binds a kernel family's flags and parses args, as `ptxgen gen` does.
func config(t testing.TB, kernel string, args ...string) kernels.Config {
	t.Helper()
	spec, err := kernels.Lookup(kernel)
	if err != nil {
		t.Skipf("kernel %s is not registered: %v", kernel, err)
	}
	fs := flag.NewFlagSet(kernel, flag.ContinueOnError)
	cfg := spec.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// goldens are the configurations whose generated Go is pinned in testdata. The PTX they
// embed is pinned by the kernels package's goldens, so only the Go file is kept here.
var goldens = []struct {
	name, kernel string
	args         []string
	targets      []string
}{
	{"gemm_100x72x448", "gemm", []string{"-m", "100", "-n", "72", "-k", "448"}, []string{"sm_120", "sm_90"}},
	{"mla_decode_default", "mla_decode", nil, []string{"sm_120", "sm_90"}},
}

func generate(t testing.TB, kernel string, args, targets []string, pkg, file string) []File {
	t.Helper()
	cfg := config(t, kernel, args...)
	files, err := Generate(cfg, lookupAll(targets...), Options{Package: pkg, File: file,
		Command: "ptxgen gen " + strings.Join(cfg.Args(), " ") + " -targets " + strings.Join(targets, ",") + " -pkg " + pkg + " -o " + file})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestGolden compares the generated Go with testdata/NAME.go.golden (go test ./gogen
// -update rewrites them), and checks that it vets and builds as a package of a downstream
// module (see TestGoldenBuilds).
func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			files := generate(t, g.kernel, g.args, g.targets, "kern", g.name+".go")
			path := filepath.Join("testdata", g.name+".go.golden")
			if *update {
				if err := os.WriteFile(path, files[0].Data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gogen -update to create it)", err)
			}
			if d := cmp.Diff(string(want), string(files[0].Data)); d != "" {
				t.Errorf("generated Go differs from %s (-want +got); if intended, run go test ./gogen -update:\n%s", path, d)
			}
		})
	}
}

var headerRE = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// TestGeneratedFile checks what every generated Go file must be: a header go generate
// recognises, recording the version and a command with no absolute path, and a doc
// comment on every exported name.
func TestGeneratedFile(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			files := generate(t, g.kernel, g.args, g.targets, "kern", "kern_gen.go")
			checkFile(t, files[0].Data)
			if len(files) != 1+len(g.targets) {
				t.Fatalf("%d files, want the Go file and %d PTX files", len(files), len(g.targets))
			}
			for i, tg := range g.targets {
				f := files[1+i]
				if f.Name != "kern_gen_"+tg+".ptx" || !bytes.Contains(f.Data, []byte(".target "+tg+"\n")) {
					t.Errorf("file %d is %s, want the %s PTX", 1+i, f.Name, tg)
				}
				if !bytes.Contains(files[0].Data, []byte("//go:embed "+f.Name+"\n")) {
					t.Errorf("the Go file does not embed %s", f.Name)
				}
			}
		})
	}
}

func checkFile(t *testing.T, src []byte) {
	t.Helper()
	first, _, _ := strings.Cut(string(src), "\n")
	if !headerRE.MatchString(first) {
		t.Errorf("first line %q does not match %s", first, headerRE)
	}
	if !strings.Contains(first, "(ptxgen "+Version+")") {
		t.Errorf("header %q does not record the generator version %s", first, Version)
	}
	if strings.Contains(first, " /") {
		t.Errorf("header %q holds an absolute path", first)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "gen.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	undocumented := func(name string, doc *ast.CommentGroup, pos token.Pos) {
		if ast.IsExported(name) && (doc == nil || strings.TrimSpace(doc.Text()) == "") {
			t.Errorf("%s: exported %s has no doc comment", fset.Position(pos), name)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			undocumented(d.Name.Name, d.Doc, d.Pos())
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					doc := s.Doc
					if doc == nil {
						doc = d.Doc
					}
					undocumented(s.Name.Name, doc, s.Pos())
				case *ast.ValueSpec:
					for _, n := range s.Names {
						doc := s.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						undocumented(n.Name, doc, n.Pos())
					}
				}
			}
		}
	}
}

// TestDeterministic: the same configuration gives the same bytes, also when another
// configuration was generated in between.
func TestDeterministic(t *testing.T) {
	g := goldens[0]
	a := generate(t, g.kernel, g.args, g.targets, "kern", "x.go")
	generate(t, "gemm", []string{"-m", "17", "-n", "9", "-k", "33", "-out", "f32"}, []string{"sm_80"}, "other", "y.go")
	b := generate(t, g.kernel, g.args, g.targets, "kern", "x.go")
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("two generations differ:\n%s", d)
	}
}

// twoKernels is a program like split-KV decode: a first kernel writes a workspace buffer
// that a second one reads, the kernels name their parameters in different orders, and n
// is one argument although both take it.
func twoKernels(t testing.TB) *plan.Program {
	t.Helper()
	part := ir.NewBuilder("part")
	x := part.Param("x", ir.PtrTo(ir.F32), 16, 256)
	ws := part.Param("ws", ir.PtrTo(ir.F32), 16, 256)
	n := part.Param("n", ir.ScalarOf(ir.I32), 4, 0)
	offs := part.Iota(64)
	ok := part.Cmp(ir.CmpLT, offs, n)
	part.Store1(ws, offs, ok, part.Load1(x, offs, ok))
	k1, err := part.Finish()
	if err != nil {
		t.Fatal(err)
	}
	comb := ir.NewBuilder("combine")
	n2 := comb.Param("n", ir.ScalarOf(ir.I32), 4, 0)
	ws2 := comb.Param("ws", ir.PtrTo(ir.F32), 16, 256)
	y := comb.Param("y", ir.PtrTo(ir.F32), 16, 256)
	offs2 := comb.Iota(64)
	ok2 := comb.Cmp(ir.CmpLT, offs2, n2)
	comb.Store1(y, offs2, ok2, comb.Load1(ws2, offs2, ok2))
	k2, err := comb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return plan.Unplanned(&ir.Program{Name: "two_step", Kernels: []*ir.Kernel{k1, k2}, Workspace: []ir.Workspace{{Name: "ws", Bytes: 256}}})
}

func TestWorkspaceBinding(t *testing.T) {
	p := twoKernels(t)
	var cs []*Compiled
	for _, tg := range []string{"sm_90", "sm_80"} {
		c, err := Compile(p, target.MustLookup(tg))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	files, err := Render(cs, Options{Package: "two", Type: TypeName(p.Name), File: "two_gen.go", Command: "test", Config: "-kernel two_step"})
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Data)
	checkFile(t, files[0].Data)
	for _, want := range []string{
		"type TwoStep struct",
		"func NewTwoStep(dev *runtime.Device) (*TwoStep, error)",
		// x, n, y are the caller's in first-appearance order; ws is bound to the workspace.
		"func (t *TwoStep) Launch(x *runtime.Buffer, n int32, y *runtime.Buffer) error",
		"return t.launch(stream, 0, runtime.Ptr(x), runtime.I32(n), runtime.Ptr(y))",
		// Launch's arguments are 0..2, the workspace buffer 3.
		"args:      [][]int{{0, 3, 1}, {1, 3, 2}},",
		"workspace: [][2]int64{{256, 0}},",
		"and its workspace buffers (ws)",
		"//\tn  int32, a multiple of 4",
		"//\ty  f32 buffer, written, at least 256 bytes, 16-byte aligned",
		"TwoStepXBytes = 256",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated Go lacks %q", want)
		}
	}
	if strings.Contains(src, "TwoStepWsBytes") {
		t.Errorf("the workspace buffer got a size constant as if it were an argument")
	}
	if t.Failed() {
		t.Log(src)
	}
}

func TestRenderErrors(t *testing.T) {
	p := twoKernels(t)
	c, err := Compile(p, target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	ok := Options{Package: "two", Type: "TwoStep", File: "two_gen.go"}
	cases := []struct {
		name string
		edit func(o *Options, c *Compiled)
		want string
	}{
		{"package", func(o *Options, c *Compiled) { o.Package = "two-step" }, "package name"},
		{"type", func(o *Options, c *Compiled) { o.Type = "twoStep" }, "exported"},
		{"file", func(o *Options, c *Compiled) { o.File = "sub/two.go" }, `byte 3 ("/")`},
		{"file bytes", func(o *Options, c *Compiled) { o.File = "\xa0.go" }, `byte 0 ("\xa0")`},
		{"file suffix", func(o *Options, c *Compiled) { o.File = "two.txt" }, "must end in .go"},
		{"kind", func(o *Options, c *Compiled) {
			c.Kernels[1].Params[0].Kind = "i64" // n: i32 in part, i64 in combine
		}, "parameter n is i64 in kernel combine"},
		{"workspace", func(o *Options, c *Compiled) {
			c.Workspace = []ir.Workspace{{Name: "n", Bytes: 4}}
		}, "names a workspace buffer but is a i32"},
		{"clash", func(o *Options, c *Compiled) {
			c.Kernels[0].Params[0].Name = "y_"
			c.Kernels[1].Params[2].Name = "Y"
		}, "would both be called"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := *c
			cc.Kernels = nil
			for _, k := range c.Kernels {
				kk := *k
				kk.Params = append(kk.Params[:0:0], k.Params...)
				cc.Kernels = append(cc.Kernels, &kk)
			}
			o := ok
			tc.edit(&o, &cc)
			_, err := Render([]*Compiled{&cc}, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTargetsMustAgree(t *testing.T) {
	p := twoKernels(t)
	a, err := Compile(p, target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	q := twoKernels(t)
	q.Kernels = q.Kernels[:1] // no kernel takes y on sm_80
	b, err := Compile(q, target.MustLookup("sm_80"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render([]*Compiled{a, b}, Options{Package: "two", Type: "TwoStep", File: "two_gen.go"})
	if err == nil || !strings.Contains(err.Error(), "no kernel takes y on sm_80") {
		t.Errorf("error %v, want one saying sm_80 lacks y", err)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ in, exported, local string }{
		{"gemm", "GEMM", "gemm"},
		{"mla_decode", "MLADecode", "mlaDecode"},
		{"kv_cache", "KVCache", "kvCache"},
		{"q_stride_t", "QStrideT", "qStrideT"},
		{"idx0", "Idx0", "idx0"},
		{"lse", "LSE", "lse"},
		{"page-size", "PageSize", "pageSize"},
	} {
		if got := exportedName(c.in); got != c.exported {
			t.Errorf("exportedName(%q) = %q, want %q", c.in, got, c.exported)
		}
		if got := localName(c.in); got != c.local {
			t.Errorf("localName(%q) = %q, want %q", c.in, got, c.local)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"GEMM", "gemm"}, {"MLADecode", "mlaDecode"}, {"Proj", "proj"}, {"GEMM128", "gemm128"}, {"X", "x"},
	} {
		if got := unexportedPrefix(c.in); got != c.want {
			t.Errorf("unexportedPrefix(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ typ, want string }{
		{"GEMM", "g"}, {"Batch", "batch"}, {"K", "theK"}, {"Ünï", "ü"}, {"Ωmega", "ω"},
	} {
		if got := receiverName(c.typ, unexportedPrefix(c.typ)); got != c.want {
			t.Errorf("receiverName(%q) = %q, want %q", c.typ, got, c.want)
		}
	}
}

// TestGoldenBuilds vets the generated files (Go and PTX) as a package of a throwaway
// downstream module that requires this one through a replace, the way examples/ use it:
// without cgo (the runtime stub), and with -tags cuda when the CUDA headers of
// `make tools-cuda` are there.
func TestGoldenBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte("module downstream\n\ngo 1.26\n\nrequire github.com/ptxgen/ptxgen v0.0.0\n\nreplace github.com/ptxgen/ptxgen => "+root+"\n"))
	write("go.sum", sum)
	var pkgs []string
	for _, g := range goldens {
		if _, err := kernels.Lookup(g.kernel); err != nil {
			continue
		}
		for _, f := range generate(t, g.kernel, g.args, g.targets, "kern", "kern_gen.go") {
			write(filepath.Join(g.name, f.Name), f.Data)
		}
		pkgs = append(pkgs, "./"+g.name)
	}
	var cs []*Compiled
	for _, tg := range []string{"sm_90", "sm_80"} {
		c, err := Compile(twoKernels(t), target.MustLookup(tg))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	files, err := Render(cs, Options{Package: "two", Type: "TwoStep", File: "two_gen.go", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		write(filepath.Join("two", f.Name), f.Data)
	}
	// The README's pattern: New's result is closed (deferred) and launched whatever
	// it is; without a device it is nil, and neither may crash.
	write(filepath.Join("two", "nil_test.go"), []byte(`package two

import (
	"errors"
	"testing"

	"github.com/ptxgen/ptxgen/runtime"
)

func TestNilSafe(t *testing.T) {
	dev, _ := runtime.Open(0)
	k, err := NewTwoStep(dev)
	defer k.Close()
	if err == nil {
		t.Skip("a device is present")
	}
	if err := k.Close(); err != nil {
		t.Errorf("Close on nil = %v, want nil", err)
	}
	if err := k.Launch(nil, 1, nil); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Launch on nil = %v, want an error wrapping runtime.ErrClosed", err)
	}
	if err := k.LaunchOn(&runtime.Stream{}, nil, 1, nil); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("LaunchOn on nil = %v, want an error wrapping runtime.ErrClosed", err)
	}
	if k.Target() != "" || k.Kernels() != nil {
		t.Errorf("Target, Kernels on nil = %q, %v", k.Target(), k.Kernels())
	}
}
`))
	pkgs = append(pkgs, "./two")
	// Launch refuses rows past the capacity, and negative rows, before any launch,
	// naming both; facts alone make a loaded-looking value without a device.
	write(filepath.Join("mla_decode_default", "rows_test.go"), []byte(`package kern

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/runtime"
)

func TestRowsRefused(t *testing.T) {
	var ks []*runtime.Kernel
	for i := range mlaDecodeBuilds[0].kernels {
		ks = append(ks, &runtime.Kernel{Facts: &mlaDecodeBuilds[0].kernels[i]})
	}
	k := &MLADecode{kernels: ks}
	c := k.MaxRows()
	if c != int(MLADecodeMaxT) || c < 1 {
		t.Fatalf("MaxRows() = %d, want the capacity MLADecodeMaxT = %d", c, MLADecodeMaxT)
	}
	for _, rows := range []int{c + 1, -1, 1 << 40} {
		err := k.Launch(rows, nil, 0, 0, nil, 0, 0, nil, 0, nil, nil, 0, 0, nil, 0, nil, nil, nil, nil)
		want := "MLADecode.Launch: " + strconv.Itoa(rows) + " rows, want 0.." + strconv.Itoa(c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Launch(%d, ...) = %v, want %q", rows, err, want)
		}
		err = k.LaunchOn(nil, rows, nil, 0, 0, nil, 0, 0, nil, 0, nil, nil, 0, 0, nil, 0, nil, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LaunchOn(nil, %d, ...) = %v, want %q", rows, err, want)
		}
	}
}
`))
	pkgs = append(pkgs, "./mla_decode_default")

	run := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off")
		cmd.Env = append(cmd.Env, env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run([]string{"CGO_ENABLED=0"}, append([]string{"vet"}, pkgs...)...)
	run([]string{"CGO_ENABLED=0"}, "test", "./two", "./mla_decode_default")
	cudadev := filepath.Join(root, ".tools", "cudadev")
	if _, err := os.Stat(filepath.Join(cudadev, "usr", "include", "cuda.h")); err != nil {
		t.Log("no CUDA headers (make tools-cuda): the -tags cuda build is not checked")
		return
	}
	run([]string{"CGO_ENABLED=1",
		"CGO_CFLAGS=-I" + filepath.Join(cudadev, "usr", "include"),
		"CGO_LDFLAGS=-L" + filepath.Join(cudadev, "usr", "lib", "x86_64-linux-gnu", "stubs")},
		append([]string{"vet", "-tags", "cuda"}, pkgs...)...)
}

// BenchmarkGenerate times one configuration's generation for one target: building the
// IR, lowering, printing the PTX and writing the Go file, which is what one
// `ptxgen gen` costs per configuration and target (plus process start).
// Run: go test ./gogen -run '^$' -bench Generate -cpu 1
func BenchmarkGenerate(b *testing.B) {
	for _, c := range []struct {
		name, kernel string
		args         []string
	}{
		{"gemm_default", "gemm", nil},
		{"gemm_100x72x448", "gemm", []string{"-m", "100", "-n", "72", "-k", "448"}},
		{"mla_decode_default", "mla_decode", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := config(b, c.kernel, c.args...)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Generate(cfg, lookupAll("sm_120"), Options{Package: "kern", File: "kern_gen.go", Command: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// lookupAll is the targets named.
func lookupAll(names ...string) []target.Target {
	var out []target.Target
	for _, n := range names {
		out = append(out, target.MustLookup(n))
	}
	return out
}

// TestRenderValidatesPTX: Render refuses a module that ptx.ValidateModule refuses (here
// an sm_90 instruction in sm_80 PTX), for the Go file and for a manifest alone: gen
// used to write PTX the validator never saw, which only ptxas or the JIT would refuse.
func TestRenderValidatesPTX(t *testing.T) {
	c, err := Compile(twoKernels(t), target.MustLookup("sm_80"))
	if err != nil {
		t.Fatal(err)
	}
	bad := *c
	mod := *c.Module
	fn := *mod.Funcs[0]
	fn.Body = append([]ptx.Stmt{&ptx.Instr{Op: "griddepcontrol.wait"}}, fn.Body...)
	mod.Funcs = append([]*ptx.Func{&fn}, mod.Funcs[1:]...)
	bad.Module = &mod
	for _, o := range []Options{
		{Package: "two", Type: "TwoStep", File: "two_gen.go"},
		{Manifest: "two.json"},
	} {
		if _, err := Render([]*Compiled{c}, o); err != nil {
			t.Fatalf("%+v: the valid module: %v", o, err)
		}
		_, err := Render([]*Compiled{&bad}, o)
		if err == nil || !strings.Contains(err.Error(), "griddepcontrol.wait needs sm_90") || !strings.Contains(err.Error(), "sm_80") {
			t.Errorf("%+v: error %v, want the validator's refusal of griddepcontrol.wait on sm_80", o, err)
		}
	}
}

// TestLaunchOnStream: every generated type has LaunchOn, which takes the caller's
// stream first (*runtime.Stream, nil the default stream) and queues every kernel on it
// (runtime.Kernel.LaunchOn with that stream); Launch is LaunchOn on the default stream.
// The launchers used to run on the default stream only.
func TestLaunchOnStream(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			src := generate(t, g.kernel, g.args, g.targets, "kern", "kern_gen.go")[0].Data
			f, err := parser.ParseFile(token.NewFileSet(), "kern_gen.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			methods := map[string]*ast.FuncDecl{}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
					methods[fd.Name.Name] = fd
				}
			}
			on, launch, inner := methods["LaunchOn"], methods["Launch"], methods["launch"]
			if on == nil || launch == nil || inner == nil {
				t.Fatalf("LaunchOn, Launch, launch: %v %v %v", on != nil, launch != nil, inner != nil)
			}
			first := on.Type.Params.List[0]
			if first.Names[0].Name != "stream" || types(first.Type) != "*runtime.Stream" {
				t.Errorf("LaunchOn's first parameter is %s %s, want stream *runtime.Stream", first.Names[0].Name, types(first.Type))
			}
			if n := countParams(on) - 1; n != countParams(launch) {
				t.Errorf("LaunchOn takes %d arguments besides the stream, Launch %d", n, countParams(launch))
			}
			// Launch's body: return r.LaunchOn(nil, its own parameters...).
			ret, ok := launch.Body.List[len(launch.Body.List)-1].(*ast.ReturnStmt)
			call, _ := ret.Results[0].(*ast.CallExpr)
			if !ok || len(launch.Body.List) != 1 || call == nil || selName(call.Fun) != "LaunchOn" || types(call.Args[0]) != "nil" {
				t.Errorf("Launch does not just return LaunchOn(nil, ...)")
			}
			// launch queues every kernel with LaunchOn(stream, ...), none with Launch.
			var onStream, plain int
			ast.Inspect(inner.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					switch selName(c.Fun) {
					case "LaunchOn":
						if len(c.Args) > 0 && types(c.Args[0]) == "stream" {
							onStream++
						}
					case "Launch":
						plain++
					}
				}
				return true
			})
			if onStream != 1 || plain != 0 {
				t.Errorf("launch: %d kernel launches on the stream, %d without it; want 1 and 0", onStream, plain)
			}
		})
	}
}

// types renders a type or a simple expression (*runtime.Stream, nil, stream).
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + types(e.X)
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", e)
}

func selName(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		return s.Sel.Name
	}
	return ""
}

func countParams(fd *ast.FuncDecl) int {
	n := 0
	for _, p := range fd.Type.Params.List {
		n += len(p.Names)
	}
	return n
}

// TestParamNamedStream: a kernel parameter called stream becomes streamArg in Launch
// and LaunchOn, which call their own first parameter stream.
func TestParamNamedStream(t *testing.T) {
	c, err := Compile(twoKernels(t), target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	k := *c.Kernels[1]
	k.Params = append(k.Params[:0:0], k.Params...)
	k.Params[2].Name = "stream" // y, the combine's output
	cc := *c
	cc.Kernels = []*ptx.Kernel{c.Kernels[0], &k}
	files, err := Render([]*Compiled{&cc}, Options{Package: "two", Type: "TwoStep", File: "two_gen.go"})
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Data)
	for _, want := range []string{
		"func (t *TwoStep) Launch(x *runtime.Buffer, n int32, streamArg *runtime.Buffer) error {",
		"func (t *TwoStep) LaunchOn(stream *runtime.Stream, x *runtime.Buffer, n int32, streamArg *runtime.Buffer) error {",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated Go lacks %q:\n%s", want, src)
		}
	}
}
