package gogen

import (
	"encoding/json"
	"fmt"

	"github.com/ptxgen/ptxgen/internal/strictjson"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/ptx"
)

// The launch manifest (`ptxgen gen -manifest FILE.json`) is what a host that is not Go
// (Python with cuda-python, C++) needs to launch a generated program exactly as the
// generated Go does: per target the PTX file, the launch plan (which kernels a call
// runs and with which split, a plan.Rule: the host runs plan.Rule.Choose, about 30
// lines, with examples to test it on; each family also carries its variant, the design
// of its CTA: heads, warps, warp grid, tile, stages, precision), the workspace, and per kernel its entry,
// parameters in order (kind, element type, alignment, minimum size as fixed bytes plus
// bytes per row plus bytes per (row, chunk) pair, and what each is bound to: one of the
// caller's arguments, a workspace buffer or the plan's split), block, dynamic shared
// memory and whether it needs the opt-in, the grid (each dimension a number or an
// argument: the rows or the split) and programmatic launch. It is built from the same
// model as the Go launcher, and ManifestKernel.Facts turns it back into the ptx.Kernel
// facts it came from (a test compares them).
const (
	// ManifestFormat names the format in every manifest's "format" field.
	ManifestFormat = "ptxgen-launch-manifest"
	// ManifestVersion is bumped on any change a reader could notice. 4: the plan's
	// families carry their variant (warps, warp_grid, stages, precision beside
	// head_block and tile). 5: and their warp roles (score_warps, producer_warps,
	// written where not 0).
	ManifestVersion = 5
	// SharedOptInBytes is the dynamic shared memory a kernel may use without opting in
	// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), as runtime.LoadPTX does.
	SharedOptInBytes = 48 << 10
)

// Manifest is the launch manifest of one program for one or more targets.
type Manifest struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Generator string `json:"generator"` // "ptxgen 0.3.0"
	Command   string `json:"command"`   // the gen command line
	Program   string `json:"program"`   // "mla_decode"
	// Capacity is the most rows a call may have (-max-tokens); 0 when no grid depends
	// on the rows. RowsArgument names the caller's argument that holds them.
	Capacity     int    `json:"capacity"`
	RowsArgument string `json:"rows_argument,omitempty"`
	// Arguments are the caller's arguments, in the order of the generated Launch.
	Arguments []ManifestArg `json:"arguments"`
	// Targets are newest first; a host picks the newest one its device runs.
	Targets []ManifestTarget `json:"targets"`
}

// ManifestArg is one of the caller's arguments.
type ManifestArg struct {
	Name string `json:"name"`
	Kind string `json:"kind"`           // "ptr" or the scalar type: "i32", "i64", "f32"
	Elem string `json:"elem,omitempty"` // for pointers, the element type
}

// ManifestTarget is the program for one target.
type ManifestTarget struct {
	Target string `json:"target"` // "sm_90"
	PTX    string `json:"ptx"`    // the PTX file, relative to the manifest's directory
	// Workspace buffers are allocated once (zeroed) when the module is loaded and
	// passed between the kernels; kernels name them in their parameters' "workspace".
	Workspace []ManifestBuffer `json:"workspace"`
	// Kernels are the program's kernels. Without a plan a call launches all of them
	// in this order, on one stream.
	Kernels []ManifestKernel `json:"kernels"`
	// Plan, when present, chooses per call the kernels to launch, in order, and the
	// split (plan.Rule.Choose with the rows and the device's SM count); a parameter
	// bound to "plan": "split" takes that split.
	Plan *plan.Rule `json:"plan"`
	// PlanExamples are choices of Plan that a host's implementation of Choose must
	// reproduce (the Go one made them).
	PlanExamples []ManifestPlanExample `json:"plan_examples,omitempty"`
}

// ManifestPlanExample is one call's plan: what Plan chooses for rows on sms SMs.
type ManifestPlanExample struct {
	Rows    int      `json:"rows"`
	SMs     int      `json:"sms"`
	Split   int      `json:"split"`
	Kernels []string `json:"kernels"`
	// MaxParts is Plan.MaxParts(rows, sms): the (row, chunk) pairs the workspace of a
	// module loaded with capacity rows on sms SMs holds.
	MaxParts int `json:"max_parts"`
}

// ManifestBuffer is a workspace buffer: Bytes + PerPart x Plan.MaxParts(capacity,
// SMs) bytes (at least 16), PerPart being 0 without a plan.
type ManifestBuffer struct {
	Name    string `json:"name"`
	Bytes   int64  `json:"bytes"`
	PerPart int64  `json:"per_part"`
}

// ManifestKernel is one kernel launch.
type ManifestKernel struct {
	Entry string `json:"entry"`
	// Grid is the CTAs per dimension: a dimension with "param" is that argument's
	// value at launch (the rows or the split; value is then the largest accepted),
	// else value.
	Grid        [3]ManifestDim `json:"grid"`
	Block       [3]int         `json:"block"`
	SharedBytes int            `json:"dynamic_shared_bytes"`
	// SharedOptIn: SharedBytes is above 48 KB, so the host must raise the function's
	// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to it before launching.
	SharedOptIn bool `json:"shared_opt_in"`
	// Programmatic: launch with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
	// (the kernel waits for the one before it in its own code).
	Programmatic bool            `json:"programmatic"`
	Params       []ManifestParam `json:"params"`
}

// ManifestDim is one grid dimension.
type ManifestDim struct {
	Value int    `json:"value"`
	Param string `json:"param,omitempty"`
}

// ManifestParam is one kernel parameter, in PTX order.
type ManifestParam struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Elem string `json:"elem,omitempty"`
	// Size is the parameter's size in the argument buffer: 8 for pointers and 64-bit
	// scalars, 4 for 32-bit ones.
	Size int `json:"size"`
	// Align is a pointer's required address alignment, or a divisor an integer must
	// have (0 or 1: none).
	Align int `json:"align"`
	// MinBytes is a pointer's least buffer size: fixed + per_row x rows + per_part x
	// rows x split.
	MinBytes ManifestSize `json:"min_bytes"`
	// Strides, for a pointer addressed through stride arguments: run contiguous
	// elements at each position, the positions stepping by each dimension's stride
	// argument (the kernel parameter it names) over its count, inner first. A host
	// refuses a negative stride, one below what the positions inside it span where
	// its count is above 1, and a buffer smaller than the farthest element
	// (ptx.KParam.CheckStrides).
	Strides *ManifestStrides `json:"strides,omitempty"`
	Written bool             `json:"written"`
	// Arg is the index of the caller's argument bound to it, -1 for a workspace
	// buffer, named by Workspace, or for the plan's value named by Plan ("split").
	Arg       int    `json:"arg"`
	Workspace string `json:"workspace,omitempty"`
	Plan      string `json:"plan,omitempty"`
}

// ManifestStrides is a strided pointer's layout (ptx.KParam.Run and Strides).
type ManifestStrides struct {
	Run  int64            `json:"run"`
	Dims []ManifestStride `json:"dims"`
}

// ManifestStride is one strided dimension: count positions stride apart, stride
// being the value of the kernel parameter it names; with count_param, the count is
// that i32 parameter's value divided by count_div, rounded up.
type ManifestStride struct {
	Stride     string `json:"stride"`
	Count      int64  `json:"count,omitempty"`
	CountParam string `json:"count_param,omitempty"`
	CountDiv   int64  `json:"count_div,omitempty"`
}

// ManifestSize is a size formula in bytes: Fixed + PerRow x rows + PerPart x rows x split.
type ManifestSize struct {
	PerRow  int64 `json:"per_row"`
	PerPart int64 `json:"per_part"`
	Fixed   int64 `json:"fixed"`
}

// paramSize is the argument-buffer size of each kind, as the runtime marshals them.
var paramSize = map[string]int{"ptr": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8}

// manifest builds the manifest from the launcher's model; ptxFile names each
// target's PTX file relative to the manifest.
func (m *model) manifest(command string, ptxFile func(target string) string) *Manifest {
	man := &Manifest{Format: ManifestFormat, Version: ManifestVersion, Generator: "ptxgen " + Version,
		Command: command, Program: m.cs[0].Program, Arguments: []ManifestArg{}}
	for _, p := range m.params {
		man.Arguments = append(man.Arguments, ManifestArg{Name: p.name, Kind: p.kind, Elem: p.elem})
		if p.rows {
			man.RowsArgument = p.name
		}
	}
	for t, c := range m.cs {
		mt := ManifestTarget{Target: isa(c), PTX: ptxFile(isa(c)), Workspace: []ManifestBuffer{}, Plan: c.Plan}
		for _, w := range c.Workspace {
			mt.Workspace = append(mt.Workspace, ManifestBuffer{Name: w.Name, Bytes: w.Bytes, PerPart: w.PerPart})
		}
		mt.PlanExamples = planExamples(c)
		for i, k := range c.Kernels {
			man.Capacity = max(man.Capacity, k.MaxRows())
			mk := ManifestKernel{Entry: k.Name, Block: [3]int{k.Block, 1, 1}, SharedBytes: k.SharedBytes,
				SharedOptIn: k.SharedBytes > SharedOptInBytes, Programmatic: k.Programmatic}
			for d := range k.Grid {
				mk.Grid[d] = ManifestDim{Value: k.Grid[d], Param: k.GridParam[d]}
			}
			for j, kp := range k.Params {
				mp := ManifestParam{Name: kp.Name, Kind: kp.Kind, Elem: kp.Elem, Size: paramSize[kp.Kind], Align: kp.Align,
					MinBytes: ManifestSize{PerRow: kp.PerRow, PerPart: kp.PerPart, Fixed: kp.Bytes}, Written: kp.Written, Arg: m.bind[t][i][j]}
				if kp.Run != 0 {
					mp.Strides = &ManifestStrides{Run: kp.Run, Dims: []ManifestStride{}}
					for _, d := range kp.Strides {
						mp.Strides.Dims = append(mp.Strides.Dims, ManifestStride(d))
					}
				}
				switch w := mp.Arg - len(m.params); {
				case w == len(c.Workspace):
					mp.Plan, mp.Arg = kp.Name, -1
				case w >= 0:
					mp.Workspace, mp.Arg = c.Workspace[w].Name, -1
				}
				mk.Params = append(mk.Params, mp)
			}
			mt.Kernels = append(mt.Kernels, mk)
		}
		man.Targets = append(man.Targets, mt)
	}
	return man
}

// Facts is the ptx.Kernel launch facts (without the module) the kernel was written from.
func (k ManifestKernel) Facts() ptx.Kernel {
	f := ptx.Kernel{Name: k.Entry, Block: k.Block[0], SharedBytes: k.SharedBytes, Programmatic: k.Programmatic}
	for d, g := range k.Grid {
		f.Grid[d], f.GridParam[d] = g.Value, g.Param
	}
	for _, p := range k.Params {
		kp := ptx.KParam{Name: p.Name, Kind: p.Kind, Elem: p.Elem, Bytes: p.MinBytes.Fixed,
			PerRow: p.MinBytes.PerRow, PerPart: p.MinBytes.PerPart, Align: p.Align, Written: p.Written}
		if p.Strides != nil {
			kp.Run = p.Strides.Run
			for _, d := range p.Strides.Dims {
				kp.Strides = append(kp.Strides, ptx.StrideDim(d))
			}
		}
		f.Params = append(f.Params, kp)
	}
	return f
}

// ParseManifest reads a manifest, refusing other formats and versions.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := strictjson.Decode(data, &m); err != nil {
		return nil, fmt.Errorf("gogen: manifest: %w", err)
	}
	if m.Format != ManifestFormat || m.Version != ManifestVersion {
		return nil, fmt.Errorf("gogen: manifest is %q version %d, want %q version %d", m.Format, m.Version, ManifestFormat, ManifestVersion)
	}
	return &m, nil
}

// RenderManifest writes the manifest of a program already lowered for each target, as
// indented JSON; ptxFile names each target's PTX file relative to the manifest.
func RenderManifest(cs []*Compiled, opt Options, ptxFile func(target string) string) ([]byte, error) {
	if opt.File == "" {
		opt.File = "manifest.go" // the model names Go identifiers the manifest does not use
	}
	if opt.Package == "" {
		opt.Package = "manifest"
	}
	if opt.Type == "" && len(cs) > 0 {
		opt.Type = TypeName(cs[0].Program)
	}
	m, err := newModel(cs, opt)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(m.manifest(opt.Command, ptxFile), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// planExampleSMs are SM counts of devices the examples plan for: RTX 5090, RTX PRO
// 6000, H100/H200, and a small one.
var planExampleSMs = []int{170, 188, 132, 16}

// planExamples are Plan's choices for a spread of rows up to the capacity on
// planExampleSMs, each with the workspace parts for that many rows.
func planExamples(c *Compiled) []ManifestPlanExample {
	if c.Plan == nil || len(c.Kernels) == 0 {
		return nil
	}
	capacity := c.Kernels[0].MaxRows()
	var out []ManifestPlanExample
	for _, sms := range planExampleSMs {
		seen := map[int]bool{}
		for _, rows := range []int{0, 1, 2, 3, 8, 17, 33, 64, 100, 256, 1000, capacity} {
			if rows > capacity || seen[rows] {
				continue
			}
			seen[rows] = true
			ch, err := c.Plan.Choose(rows, sms)
			if err != nil {
				continue
			}
			out = append(out, ManifestPlanExample{Rows: rows, SMs: sms, Split: ch.Split, Kernels: append([]string{}, ch.Kernels...),
				MaxParts: c.Plan.MaxParts(rows, sms)})
		}
	}
	return out
}
