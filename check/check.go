// Package check runs a generated program on seeded (or given) inputs and compares
// its outputs with the float64 reference. The same Case runs on the emulator here
// and on a GPU in cuda builds, so both are judged by one set of rules.
package check

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/ptx"
)

// Case is one program ready to run: compiled kernels, the initial contents of
// every buffer parameter (by name; outputs and workspace are filled with 0xFF so
// an element the kernel forgets to write shows up as NaN), scalar arguments by
// name, and the comparison of the final buffers with the reference.
type Case struct {
	Name     string
	Compiled *lower.Compiled
	Buffers  map[string][]byte
	Scalars  map[string]any // int32, int64 or float32
	Compare  func(final map[string][]byte) []golden.Report
	// EmuAbs is an absolute allowance per output buffer, added to the GPU-emulator
	// bound where the case's arithmetic amplifies the documented differences (see
	// gpu_diff.go: softmax weights in mla_decode).
	EmuAbs map[string]float64
	// WriteVectors, when set, writes the case's inputs and reference outputs as a
	// test-vector folder (for other implementations, such as the Triton baseline).
	WriteVectors func(dir string) error
	// MaxWarpInstrs bounds the warp instructions of each CTA in the emulator (0:
	// emu.DefaultMaxWarpInstrs).
	MaxWarpInstrs int64
	// MaxWork bounds the emulation work of all the case's launches together, in
	// emu.Work units (0: no bound), so that a program of one's own cannot run for
	// hours: a launch whose first CTA's work times its CTAs would pass it stops
	// after that CTA.
	MaxWork int64
	// WorkBound is the least work ForProgram found the call needs (0 where it did
	// not look), and WorkUsed the work the emulator's last run of the case did: a
	// run that ends with WorkUsed < WorkBound is a defect of the bound.
	WorkBound, WorkUsed int64
	// Conflicts, if set, receives the emulator's ldmatrix bank-conflict counts over
	// every kernel of the case (see emu.SharedConflicts); the GPU executor ignores it.
	Conflicts *emu.SharedConflicts
	// Variant is the design of the CTAs the case runs (kernels.MLAVariant.Short),
	// "" for kernels without variants.
	Variant string
	// AdmittedBytes is the host memory the case was estimated to hold at its peak
	// when it was admitted (ForConfig, ForProgram), 0 where nothing estimated it.
	AdmittedBytes int64
}

// Executor runs every kernel of a case in order and returns the final contents of
// every buffer.
type Executor interface {
	Run(c *Case) (map[string][]byte, error)
}

// Args returns kernel k's launch arguments in parameter order: addr maps a buffer
// name to its device address.
func (c *Case) Args(k *ptx.Kernel, addr func(name string) (uint64, error)) ([]any, error) {
	var args []any
	for _, p := range k.Params {
		if p.Kind == "ptr" {
			a, err := addr(p.Name)
			if err != nil {
				return nil, fmt.Errorf("%s: parameter %s: %v", k.Name, p.Name, err)
			}
			args = append(args, a)
			continue
		}
		v, ok := c.Scalars[p.Name]
		if !ok {
			return nil, fmt.Errorf("%s: no value for scalar parameter %s", k.Name, p.Name)
		}
		args = append(args, v)
	}
	return args, nil
}

// Result is the outcome of running a case.
type Result struct {
	Case    string
	Reports []golden.Report
}

// OK reports whether every comparison passed.
func (r *Result) OK() bool {
	for _, rep := range r.Reports {
		if !rep.OK() {
			return false
		}
	}
	return len(r.Reports) > 0
}

func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Case)
	for _, rep := range r.Reports {
		b.WriteString(rep.String())
		if !strings.HasSuffix(rep.String(), "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Run executes c and compares its outputs.
func Run(x Executor, c *Case) (*Result, error) {
	final, err := x.Run(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return &Result{Case: c.Name, Reports: c.Compare(final)}, nil
}

// poison returns n bytes of 0xFF: NaN as bf16, f32 and e4m3.
func poison(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xFF
	}
	return b
}

// bytesOf encodes a slice little-endian.
func bytesOf(data any) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, data)
	if err != nil {
		panic(err)
	}
	return b
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func u16s(b []byte) []uint16 {
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// bf16s decodes little-endian bf16 values.
func bf16s(b []byte) []dtype.BF16 {
	out := make([]dtype.BF16, len(b)/2)
	for i := range out {
		out[i] = dtype.BF16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// addWorkspace adds the program's scratch buffers for parts (row, chunk) pairs,
// poisoned.
func addWorkspace(c *Case, parts int) {
	for _, w := range c.Compiled.Workspace {
		c.Buffers[w.Name] = poison(w.BytesFor(parts))
	}
}
