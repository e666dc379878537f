package gogen

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// The manifest round trip: parsed back, each target's launches give exactly the launch
// facts the generator compiled (ptx.Kernel without the module), in the Go launcher's
// order, bound to the same arguments and workspace buffers as the generated Launch,
// and they name PTX files that are among the generated ones and hold those entries.
func TestManifestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		kernel   string
		args     []string
		targets  []string
		capacity int
	}{
		{"mla_decode", []string{"-max-tokens", "8", "-heads", "64"}, []string{"sm_120", "sm_90", "sm_80"}, 8},
		{"mla_decode", []string{"-tokens", "3", "-heads", "8", "-k1", "0", "-split", "1"}, []string{"sm_90"}, 3},
		{"gemm", []string{"-m", "100", "-n", "72", "-k", "448"}, []string{"sm_90"}, 0},
	} {
		name := tc.kernel + " " + strings.Join(tc.args, " ")
		cfg := config(t, tc.kernel, tc.args...)
		var cs []*Compiled
		for _, tg := range tc.targets {
			p, err := cfg.Build(target.MustLookup(tg))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Compile(p, target.MustLookup(tg))
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		files, err := Render(cs, Options{Package: "k", Type: TypeName(cs[0].Program), File: "k_gen.go", Manifest: "k.json", Command: "test"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byName := map[string][]byte{}
		for _, f := range files {
			byName[f.Name] = f.Data
		}
		man, err := ParseManifest(byName["k.json"])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		model, err := newModel(cs, Options{Package: "k", Type: TypeName(cs[0].Program), File: "k_gen.go"})
		if err != nil {
			t.Fatal(err)
		}
		if man.Capacity != tc.capacity || man.Program != cs[0].Program {
			t.Errorf("%s: capacity %d, program %s; want %d, %s", name, man.Capacity, man.Program, tc.capacity, cs[0].Program)
		}
		var launchArgs []string
		for _, p := range model.params {
			launchArgs = append(launchArgs, p.name)
		}
		var manArgs []string
		for _, a := range man.Arguments {
			manArgs = append(manArgs, a.Name)
		}
		if d := cmp.Diff(launchArgs, manArgs); d != "" {
			t.Errorf("%s: arguments differ from the Go Launch's (-go +manifest):\n%s", name, d)
		}
		if len(man.Targets) != len(cs) {
			t.Fatalf("%s: %d targets, want %d", name, len(man.Targets), len(cs))
		}
		for ti, c := range cs {
			mt := man.Targets[ti]
			text, ok := byName[mt.PTX]
			if mt.Target != isa(c) || !ok || string(text) != c.Module.Print() {
				t.Errorf("%s: target %d is %s with PTX %q, want %s's generated PTX", name, ti, mt.Target, mt.PTX, isa(c))
			}
			var ws []string
			for i, w := range mt.Workspace {
				if w != (ManifestBuffer{Name: c.Workspace[i].Name, Bytes: c.Workspace[i].Bytes, PerPart: c.Workspace[i].PerPart}) {
					t.Errorf("%s %s: workspace %d is %+v, want %+v", name, mt.Target, i, w, c.Workspace[i])
				}
				ws = append(ws, w.Name)
			}
			if len(mt.Workspace) != len(c.Workspace) || len(mt.Kernels) != len(c.Kernels) {
				t.Fatalf("%s %s: %d workspace buffers and %d kernels, want %d and %d", name, mt.Target, len(mt.Workspace), len(mt.Kernels), len(c.Workspace), len(c.Kernels))
			}
			if d := cmp.Diff(c.Plan, mt.Plan); d != "" {
				t.Errorf("%s %s: plan differs (-compiled +manifest):\n%s", name, mt.Target, d)
			}
			// Each family carries its whole variant, and its kernels launch the warps it
			// names.
			if mt.Plan != nil {
				block := map[string]int{}
				for _, mk := range mt.Kernels {
					block[mk.Entry] = mk.Block[0]
				}
				for fi, f := range mt.Plan.Families {
					if f.HeadBlock < 16 || f.Tile < 32 || f.Warps < 1 || f.WarpGrid[0]*f.WarpGrid[1] != f.Warps || f.Stages < 1 || f.Precision == "" {
						t.Errorf("%s %s: family %d's variant is incomplete: %+v", name, mt.Target, fi, f)
					}
					for _, e := range []string{f.Direct, f.Partial, f.DirectSmall, f.PartialSmall} {
						if e != "" && block[e] != 32*f.Warps {
							t.Errorf("%s %s: family %d has %d warps, its kernel %s launches %d threads", name, mt.Target, fi, f.Warps, e, block[e])
						}
					}
				}
			}
			for _, ex := range mt.PlanExamples {
				ch, err := c.Plan.Choose(ex.Rows, ex.SMs)
				if err != nil || ch.Split != ex.Split || !cmp.Equal(ch.Kernels, ex.Kernels, cmpopts.EquateEmpty()) || c.Plan.MaxParts(ex.Rows, ex.SMs) != ex.MaxParts {
					t.Errorf("%s %s: plan example %+v, Choose gives %+v, %v", name, mt.Target, ex, ch, err)
				}
			}
			for ki, k := range c.Kernels {
				mk := mt.Kernels[ki]
				want := *k
				want.Module = nil
				if d := cmp.Diff(want, mk.Facts()); d != "" {
					t.Errorf("%s %s: launch %d's facts differ (-compiled +manifest):\n%s", name, mt.Target, ki, d)
				}
				if mk.SharedOptIn != (k.SharedBytes > 48<<10) || mk.Block != [3]int{k.Block, 1, 1} {
					t.Errorf("%s %s %s: opt-in %v for %d bytes, block %v", name, mt.Target, k.Name, mk.SharedOptIn, k.SharedBytes, mk.Block)
				}
				if !strings.Contains(string(text), ".entry "+mk.Entry+"(") {
					t.Errorf("%s %s: %s has no entry %s", name, mt.Target, mt.PTX, mk.Entry)
				}
				for pi, p := range mk.Params {
					// The Go launcher's binding: argument index, or workspace after them,
					// then the plan's split.
					got := p.Arg
					switch {
					case p.Workspace != "":
						got = len(man.Arguments) + indexOf(ws, p.Workspace)
					case p.Plan == "split":
						got = len(man.Arguments) + len(ws)
					}
					if want := model.bind[ti][ki][pi]; got != want || p.Size != map[string]int{"ptr": 8, "i64": 8, "i32": 4, "f32": 4}[p.Kind] {
						t.Errorf("%s %s %s: parameter %s bound to %d (size %d), the Go launcher binds %d", name, mt.Target, k.Name, p.Name, got, p.Size, want)
					}
					if p.Arg >= 0 && man.Arguments[p.Arg].Name != p.Name {
						t.Errorf("%s %s %s: parameter %s bound to argument %s", name, mt.Target, k.Name, p.Name, man.Arguments[p.Arg].Name)
					}
				}
			}
		}
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func TestParseManifestRefuses(t *testing.T) {
	for _, bad := range []string{
		`{"format": "other", "version": 1}`,
		`{"format": "ptxgen-launch-manifest", "version": 1}`,
		`{"format": "ptxgen-launch-manifest", "version": 2, "extra": 0}`,
		`[`,
	} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("ParseManifest(%s) accepted it", bad)
		}
	}
	// Strictly (internal/strictjson): a key of another case was taken for the field,
	// null for zero, a short grid padded with zeros.
	v := fmt.Sprint(ManifestVersion)
	for _, c := range []struct{ doc, want string }{
		{`{"Format": "ptxgen-launch-manifest", "version": ` + v + `}`, `unknown key Format: keys are case-sensitive, did you mean "format"?`},
		{`{"format": "ptxgen-launch-manifest", "version": ` + v + `, "capacity": null}`, "capacity is null: want an integer"},
		{`{"format": "ptxgen-launch-manifest", "version": ` + v + `, "capacity": "4"}`, `capacity is the string "4"`},
		{`{"format": "ptxgen-launch-manifest", "version": ` + v + `, "targets": [{"kernels": [{"grid": [{"value": 1}]}]}]}`, "targets[0].kernels[0].grid has 1 elements: want exactly 3"},
	} {
		if _, err := ParseManifest([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseManifest(%s) = %v, want %q", c.doc, err, c.want)
		}
	}
}

// A manifest without a Go file names the PTX files after itself.
func TestManifestAlone(t *testing.T) {
	cfg := config(t, "mla_decode", "-max-tokens", "4", "-heads", "16")
	files, err := Generate(cfg, lookupAll("sm_90"), Options{Manifest: "dec.json", Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if d := cmp.Diff([]string{"dec_sm_90.ptx", "dec.json"}, names); d != "" {
		t.Fatalf("files (-want +got):\n%s", d)
	}
	man, err := ParseManifest(files[1].Data)
	if err != nil || man.Targets[0].PTX != "dec_sm_90.ptx" || man.Capacity != 4 {
		t.Fatalf("manifest %+v, %v", man, err)
	}
	if _, err := ptx.Parse(string(files[0].Data)); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(cfg, lookupAll("sm_90"), Options{Manifest: "dec.txt"}); err == nil {
		t.Error("a manifest not named .json was accepted")
	}
}

// TestDocsManifestVersion: the pages that state the manifest's format version state
// the one gen writes (the example host's gen.sh said 4 after version 5 came in);
// the README must state it.
func TestDocsManifestVersion(t *testing.T) {
	versionRE := regexp.MustCompile(`(?:manifest \(|format )version ([0-9]+)`)
	for _, path := range []string{"../README.md", "../docs/python.md", "../python/README.md", "../python/gen.sh", "../examples/python/README.md"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ms := versionRE.FindAllSubmatch(data, -1)
		if len(ms) == 0 && path == "../README.md" {
			t.Errorf("%s states no manifest version (%s)", path, versionRE)
		}
		for _, m := range ms {
			if v, _ := strconv.Atoi(string(m[1])); v != ManifestVersion {
				t.Errorf("%s: %q: version %d, gen writes %d", path, m[0], v, ManifestVersion)
			}
		}
	}
}
