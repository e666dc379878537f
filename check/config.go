package check

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	arch "github.com/ptxgen/ptxgen/target"
)

// CaseOptions are what a command asks of a case beyond the kernel configuration.
type CaseOptions struct {
	Seed    uint64
	Vectors string  // mla_decode: a test-vector folder whose inputs and outputs to use
	Invalid float64 // mla_decode: fraction of candidate slots set to -1
	Poison  bool    // mla_decode: NaN pages behind slots past len
	// OutOfPool: mla_decode: indices slots, slots+1 and INT_MAX inside each row's
	// valid prefix (invalid like -1).
	OutOfPool bool
	// PoolGiB: mla_decode: pools of this many GiB per segment, valid candidates in
	// their last pages (MLAPool); 0 means small pools. The GPU check's -pool-gib.
	PoolGiB float64
	// MaxHostBytes bounds the host memory of the case (0: HostMemoryLimit).
	MaxHostBytes int64
}

// AddFlags registers the options as the check commands' flags (-seed, -vectors,
// -invalid, -poison), with their defaults, writing into o.
func (o *CaseOptions) AddFlags(fs *flag.FlagSet) {
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the random inputs")
	fs.StringVar(&o.Vectors, "vectors", "", "mla_decode only: a test-vector folder (meta.json, inputs, float64 outputs); its meta.json sets the configuration")
	kernels.Float32Var(fs, &o.Invalid, "invalid", 0.1, "mla_decode only: fraction of candidate slots set to -1 (0..1)")
	fs.BoolVar(&o.Poison, "poison", true, "mla_decode only: point slots past len at NaN-filled pages")
	fs.BoolVar(&o.OutOfPool, "out-of-pool", false, "mla_decode only: put the indices slots, slots+1 and INT_MAX inside every row's valid prefix (invalid like -1: never read)")
}

// VectorsUsageWithFrom is -vectors' help where the command also takes -from (ptxgen
// check), which reads a kernel vector folder (golden.KernelVectorsFormat) there.
const VectorsUsageWithFrom = "a vector folder to compare with: mla_decode's test vectors (meta.json, inputs, float64 outputs; its meta.json sets the configuration), or with -from a kernel vector folder (meta.json with the args, NAME.bin per buffer read, NAME.want.f64 per buffer compared; README, \"Kernels of your own\")"

// Validate reports an option value out of range as a *kernels.ConfigError.
func (o CaseOptions) Validate() error {
	if !(o.Invalid >= 0 && o.Invalid <= 1) { // NaN too
		return &kernels.ConfigError{Flag: "invalid", Value: fmt.Sprint(o.Invalid), Want: "a fraction in 0..1"}
	}
	if !(o.PoolGiB >= 0 && o.PoolGiB <= MaxPoolBytes>>30) { // NaN too
		return &kernels.ConfigError{Flag: "pool-gib", Value: fmt.Sprint(o.PoolGiB), Want: fmt.Sprintf("0 (small pools) or up to %d GiB per segment", MaxPoolBytes>>30)}
	}
	if o.Vectors != "" && o.OutOfPool {
		return &kernels.ConfigError{Flag: "vectors", Value: o.Vectors, Want: "no -out-of-pool with it (a folder brings its own inputs)"}
	}
	if o.Vectors != "" && o.PoolGiB != 0 {
		return &kernels.ConfigError{Flag: "vectors", Value: o.Vectors, Want: "no -pool-gib with it (a folder brings its own pools)"}
	}
	return nil
}

// VectorPlanFlags are the kernel flags that still apply with -vectors: they plan the
// launch (split, head block, tile) and choose the arithmetic (precision, with
// its tolerance) but do not change what is computed; meta.json sets the rest of
// the configuration and the folder holds the inputs.
var VectorPlanFlags = []string{"split", "sms", "head-block", "tile", "precision"}

// CheckVectorFlags refuses, when -vectors is given, any flag it would override:
// a configuration flag of mla_decode other than VectorPlanFlags, or -seed, -invalid,
// -poison (the folder's inputs are fixed). set lists the flags given explicitly.
func (o CaseOptions) CheckVectorFlags(set map[string]bool) error {
	if o.Vectors == "" {
		return nil
	}
	spec, err := kernels.Lookup("mla_decode")
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	spec.Bind(fs)
	var conflicts []string
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] && !slices.Contains(VectorPlanFlags, f.Name) {
			conflicts = append(conflicts, f.Name)
		}
	})
	for _, n := range []string{"seed", "invalid", "poison"} {
		if set[n] {
			conflicts = append(conflicts, n)
		}
	}
	if len(conflicts) > 0 {
		return &kernels.ConfigError{Flag: conflicts[0], Value: fmt.Sprintf("with -vectors %s", o.Vectors),
			Want: "no configuration or input flags with -vectors (its meta.json and files set them); only -" + strings.Join(VectorPlanFlags, ", -") + " and -target apply"}
	}
	return nil
}

// MLAOnlyFlags are the check options that describe mla_decode's inputs (its
// candidate slots, pages and pools); other kernels have none of these.
var MLAOnlyFlags = []string{"vectors", "invalid", "poison", "out-of-pool", "pool-gib"}

// CheckKernelFlags refuses, for a configuration v (a kernels.Config Value) that is not
// mla_decode, any of MLAOnlyFlags that fs was given explicitly, whatever its value:
// they would be ignored.
func CheckKernelFlags(v any, fs *flag.FlagSet) error {
	if _, ok := v.(kernels.MLAConfig); ok {
		return nil
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && slices.Contains(MLAOnlyFlags, f.Name) {
			err = &kernels.ConfigError{Flag: f.Name, Value: f.Value.String(),
				Want: fmt.Sprintf("no -%s with -kernel %s: it applies to mla_decode only (its inputs), and would be ignored", f.Name, kernelName(v))}
		}
	})
	return err
}

// kernelName is the -kernel value of a configuration.
func kernelName(v any) string {
	switch v.(type) {
	case kernels.GEMMConfig:
		return "gemm"
	case kernels.CopyConfig:
		return "copy"
	case kernels.MMALoopConfig:
		return "mma_loop"
	}
	return fmt.Sprintf("%T", v)
}

// ForConfig makes the case for a validated kernel configuration (the Value of a
// kernels.Config). Bad option values are *kernels.ConfigError.
func ForConfig(v any, target arch.Target, o CaseOptions) (*Case, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if _, ok := v.(kernels.MLAConfig); !ok {
		switch {
		case o.Vectors != "":
			return nil, &kernels.ConfigError{Flag: "vectors", Value: o.Vectors, Want: "test vectors exist for mla_decode only"}
		case o.OutOfPool:
			return nil, &kernels.ConfigError{Flag: "out-of-pool", Value: "true", Want: "false: only mla_decode has a pool"}
		case o.PoolGiB != 0:
			return nil, &kernels.ConfigError{Flag: "pool-gib", Value: fmt.Sprint(o.PoolGiB), Want: "0: only mla_decode has a pool"}
		}
	}
	if o.Vectors == "" {
		if err := CheckHostMemory(v, target, o.MaxHostBytes); err != nil {
			return nil, err
		}
	}
	// Again once lowered, with the emulator's own state, before any buffer exists.
	a := &hostAdmission{v: v, target: target, limit: o.MaxHostBytes}
	c, err := forConfig(v, target, o, a.admit)
	if err != nil {
		return nil, err
	}
	if c.AdmittedBytes == 0 {
		c.AdmittedBytes = a.admitted
	}
	return c, nil
}

func forConfig(v any, target arch.Target, o CaseOptions, admit func(*lower.Compiled) error) (*Case, error) {
	switch v := v.(type) {
	case kernels.GEMMConfig:
		return gemmCase(v, target, o.Seed, 0, 0, admit)
	case kernels.CopyConfig:
		return copyCase(v, target, o.Seed, admit)
	case kernels.MMALoopConfig:
		return mmaLoopCase(v, target, o.Seed, admit)
	case kernels.MLAConfig:
		if o.Vectors != "" {
			c, err := Vectors(o.Vectors, target, v, o.MaxHostBytes)
			if err != nil {
				return nil, &kernels.ConfigError{Flag: "vectors", Value: o.Vectors, Want: "a readable test-vector folder (" + err.Error() + ")"}
			}
			return c, nil
		}
		return mlaPool(v, target, golden.MLAGenOptions{Seed: o.Seed, InvalidFrac: o.Invalid, Poison: o.Poison, OutOfPool: o.OutOfPool}, int64(o.PoolGiB*(1<<30)), admit)
	}
	return nil, fmt.Errorf("check: no reference for %T", v)
}
