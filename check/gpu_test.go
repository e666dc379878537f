package check

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/ptx"
)

// emuDevice is a GPUDevice on the emulator, so that GPU's bookkeeping (allocation,
// argument order and types, copies, unloading) is tested without a GPU.
type emuDevice struct {
	mem      *emu.Memory
	n        int
	live     map[*emuBuf]bool
	loaded   int
	launched []string
	syncs    int
}

type emuBuf struct {
	d    *emuDevice
	name string
	addr uint64
	size int64
}

type emuKernel struct {
	d *emuDevice
	k *ptx.Kernel
}

func newEmuDevice() *emuDevice {
	return &emuDevice{mem: emu.NewMemory(), live: map[*emuBuf]bool{}}
}

func (d *emuDevice) Alloc(bytes int64) (GPUBuffer, error) {
	d.n++
	b := &emuBuf{d: d, name: fmt.Sprintf("buf%d", d.n), size: bytes}
	b.addr = d.mem.Alloc(b.name, make([]byte, bytes))
	d.live[b] = true
	return b, nil
}

func (d *emuDevice) Load(k *ptx.Kernel) (GPUKernel, error) {
	d.loaded++
	return &emuKernel{d: d, k: k}, nil
}

func (d *emuDevice) Sync() error { d.syncs++; return nil }

func (b *emuBuf) CopyIn(src []byte) error {
	if !b.d.live[b] {
		return errors.New("freed")
	}
	copy(b.d.mem.Bytes(b.name), src)
	return nil
}

func (b *emuBuf) CopyOut(dst []byte) error {
	if !b.d.live[b] {
		return errors.New("freed")
	}
	copy(dst, b.d.mem.Bytes(b.name))
	return nil
}

func (b *emuBuf) Free() error {
	if !b.d.live[b] {
		return errors.New("double free")
	}
	delete(b.d.live, b)
	return nil
}

func (k *emuKernel) Launch(args []any) error {
	conv := make([]any, len(args))
	for i, a := range args {
		p := k.k.Params[i]
		switch a := a.(type) {
		case *emuBuf:
			if p.Kind != "ptr" {
				return fmt.Errorf("buffer for scalar %s", p.Name)
			}
			conv[i] = a.addr
		case int32:
			if p.Kind != "i32" {
				return fmt.Errorf("int32 for %s %s", p.Kind, p.Name)
			}
			conv[i] = a
		case int64:
			if p.Kind != "i64" {
				return fmt.Errorf("int64 for %s %s", p.Kind, p.Name)
			}
			conv[i] = a
		default:
			return fmt.Errorf("unexpected %T for %s", a, p.Name)
		}
	}
	k.d.launched = append(k.d.launched, k.k.Name)
	return emu.RunKernel(k.k, conv, k.d.mem)
}

func (k *emuKernel) Unload() error { k.d.loaded--; return nil }

func TestGPUExecutorOnEmulatedDevice(t *testing.T) {
	cases := []func() (*Case, error){
		func() (*Case, error) {
			return GEMM(kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.BF16}, tgt("sm_90"), 3)
		},
		func() (*Case, error) {
			// Split in two chunks: two kernels and a workspace.
			cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 100, PageSize: 53, HasLen: true}}}, Split: 2}
			return MLA(cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: 2, InvalidFrac: 0.1, Poison: true})
		},
	}
	for _, mk := range cases {
		c, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.Name, func(t *testing.T) {
			d := newEmuDevice()
			var seen []string
			g := GPU{Dev: d, Loaded: func(k *ptx.Kernel, _ GPUKernel) { seen = append(seen, k.Name) }}
			gr, err := Run(g, c)
			if err != nil {
				t.Fatal(err)
			}
			if !gr.OK() {
				t.Fatalf("GPU executor on the emulated device:\n%s", gr)
			}
			if len(d.live) != 0 || d.loaded != 0 {
				t.Errorf("%d buffers and %d kernels left behind", len(d.live), d.loaded)
			}
			if len(d.launched) != len(c.Compiled.Kernels) || len(seen) != len(d.launched) || d.syncs != len(d.launched) {
				t.Errorf("launched %v, Loaded saw %v, %d syncs, want %d kernels", d.launched, seen, d.syncs, len(c.Compiled.Kernels))
			}
			// The same case on the emulator gives identical bytes: the diff is empty.
			a, err := g.Run(c)
			if err != nil {
				t.Fatal(err)
			}
			// Outputs come back copied; inputs no kernel writes (a pool of many
			// GiB) come back as they went in, without a second host copy.
			for name, buf := range c.Buffers {
				same := len(buf) > 0 && &a[name][0] == &buf[0]
				if written := c.Outputs()[name] != ""; same == written && !isWorkspace(c, name) {
					t.Errorf("buffer %s: returned without a copy = %v, but written = %v", name, same, written)
				}
			}
			b, err := Emulator{}.Run(c)
			if err != nil {
				t.Fatal(err)
			}
			ds := DiffRuns(c, a, b)
			if !DiffsOK(ds) {
				t.Fatalf("diff:\n%s", FormatDiffs(ds))
			}
			for _, d := range ds {
				if d.Differ != 0 {
					t.Errorf("%s", d)
				}
			}
		})
	}
}

func TestScalarArg(t *testing.T) {
	good := []struct {
		kind string
		in   any
		want any
	}{
		{"i32", int64(5), int32(5)},
		{"i64", int64(-7), int64(-7)},
		{"i64", int32(3), int64(3)},
		{"u32", 9, uint32(9)},
		{"u64", int64(1 << 40), uint64(1 << 40)},
		{"f32", float32(0.5), float32(0.5)},
		{"f64", float32(0.25), 0.25},
	}
	for _, g := range good {
		got, err := ScalarArg(g.kind, g.in)
		if err != nil || got != g.want {
			t.Errorf("ScalarArg(%s, %T %v) = %T %v, %v; want %T %v", g.kind, g.in, g.in, got, got, err, g.want, g.want)
		}
	}
	bad := []struct {
		kind string
		in   any
	}{
		{"i32", int64(1 << 40)}, {"u32", -1}, {"u64", int64(-1)}, {"i32", float32(1)},
		{"f32", int64(1)}, {"x", 1}, {"i32", "1"},
	}
	for _, b := range bad {
		if v, err := ScalarArg(b.kind, b.in); err == nil {
			t.Errorf("ScalarArg(%s, %T %v) = %v, want an error", b.kind, b.in, b.in, v)
		}
	}
}

func bf16Bytes(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		u := uint16(math.Float32bits(float32(v)) >> 16)
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

func f32Bytes(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		u := math.Float32bits(float32(v))
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}

func TestDiffBounds(t *testing.T) {
	// bf16: 1.0 and the next value up (1 + 2^-7) are one ulp apart: allowed on a few
	// elements, not on many; 1.0 against 1 + 2^-6 is two ulps: outside the bound.
	ones := make([]float64, 200)
	for i := range ones {
		ones[i] = 1
	}
	bumped := append([]float64(nil), ones...)
	bumped[3] = 1 + 0x1p-7
	if d := diffBuffer("out", "bf16", bf16Bytes(bumped...), bf16Bytes(ones...), 0); !d.OK() || d.Differ != 1 || d.MaxULP != 1 {
		t.Errorf("one 1-ulp difference in 200: %s", d)
	}
	many := append([]float64(nil), ones...)
	for i := 0; i < 10; i++ {
		many[i] = 1 + 0x1p-7
	}
	if d := diffBuffer("out", "bf16", bf16Bytes(many...), bf16Bytes(ones...), 0); d.OK() {
		t.Errorf("ten 1-ulp differences in 200 (5%%) passed: %s", d)
	}
	two := append([]float64(nil), ones...)
	two[0] = 1 + 0x1p-6
	if d := diffBuffer("out", "bf16", bf16Bytes(two...), bf16Bytes(ones...), 0); d.OK() || d.MaxULP != 2 {
		t.Errorf("a 2-ulp difference passed: %s", d)
	}
	// f32: 1e-6 relative passes, 1e-4 does not; near zero the scale term applies.
	if d := diffBuffer("lse", "f32", f32Bytes(1+1e-6, 2, 1e-9), f32Bytes(1, 2, 0), 0); !d.OK() {
		t.Errorf("f32 1e-6: %s", d)
	}
	if d := diffBuffer("lse", "f32", f32Bytes(1+1e-4, 2), f32Bytes(1, 2), 0); d.OK() {
		t.Errorf("f32 1e-4 passed: %s", d)
	}
	// The case's absolute allowance (mla_decode's softmax amplification) widens the f32
	// bound by exactly that much.
	if d := diffBuffer("out", "f32", f32Bytes(1, 2, 1e-4), f32Bytes(1, 2, 0), 2e-4); !d.OK() {
		t.Errorf("1e-4 within an allowance of 2e-4: %s", d)
	}
	if d := diffBuffer("out", "f32", f32Bytes(1, 2, 1e-3), f32Bytes(1, 2, 0), 2e-4); d.OK() {
		t.Errorf("1e-3 passed an allowance of 2e-4: %s", d)
	}
	// Special values: equal infinities and NaN against NaN agree; a NaN on one side fails.
	inf := math.Inf(1)
	if d := diffBuffer("lse", "f32", f32Bytes(inf, math.NaN(), 1), f32Bytes(inf, math.NaN(), 1), 0); !d.OK() || d.Differ != 0 {
		t.Errorf("equal specials: %s", d)
	}
	if d := diffBuffer("lse", "f32", f32Bytes(math.NaN(), 1), f32Bytes(0, 1), 0); d.OK() || d.Special != 1 {
		t.Errorf("one-sided NaN: %s", d)
	}
	if d := diffBuffer("lse", "f32", f32Bytes(1), f32Bytes(1, 2), 0); d.OK() || !strings.Contains(d.String(), "sizes differ") {
		t.Errorf("size mismatch: %s", d)
	}
}

func TestBF16ULP(t *testing.T) {
	for _, c := range []struct{ m, want float64 }{
		{1, 0x1p-7}, {1.99, 0x1p-7}, {2, 0x1p-6}, {0.75, 0x1p-8}, {0x1p-130, 0x1p-133},
	} {
		if got := bf16ULP(c.m); got != c.want {
			t.Errorf("bf16ULP(%g) = %g, want %g", c.m, got, c.want)
		}
	}
}

func isWorkspace(c *Case, name string) bool {
	for _, w := range c.Compiled.Workspace {
		if w.Name == name {
			return true
		}
	}
	return false
}
