package check

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptxgen/ptxgen/internal/memtest"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// measuredCheck builds the case of cfg and runs it in the emulator, returning the
// heap it held at its peak and what HostBytes and EmulatorStateBytes estimate.
func measuredCheck(t *testing.T, cfg any) (peak, est float64) {
	t.Helper()
	var runErr error
	var state int64
	peak = peakHeapBytes(func() {
		c, err := ForConfig(cfg, tgt("sm_90"), CaseOptions{Seed: 1, Invalid: 0.1, Poison: true})
		if err != nil {
			runErr = err
			return
		}
		if state, _, err = EmulatorStateBytes(c.Compiled); err != nil {
			runErr = err
			return
		}
		res, err := Run(Emulator{}, c)
		if err == nil && !res.OK() {
			err = fmt.Errorf("%s", res)
		}
		runErr = err
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	buffers, _ := HostBytes(cfg, tgt("sm_90"))
	t.Logf("%+v: estimate %.1f MiB + the emulator's state %.1f MiB, measured peak %.1f MiB", cfg, buffers/(1<<20), float64(state)/(1<<20), peak/(1<<20))
	return peak, buffers + float64(state)
}

// TestHostBytesCoversMeasured: the estimate that admits a check (HostBytes and the
// emulator's state) is at least the heap the check holds at its peak, building the
// case, running it in the emulator and comparing, on cases whose buffers are larger
// than the emulator's own state; and from a small case of the same kernel to the
// large one it grows at least as much as the heap does (within 1 MiB), so that no
// copy of a buffer hides in the allowance for the emulator's state. It once counted
// gemm's B twice where four copies existed (the case's, two in the emulator's memory
// and the read-only snapshot), so cases it admitted ran out of memory.
func TestHostBytesCoversMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("emulates cases of tens of MB")
	}
	mlaOf := func(k int) kernels.MLAConfig {
		return kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: k, PageSize: 64, HasLen: true}}}}
	}
	for _, c := range []struct{ large, small any }{
		{kernels.GEMMConfig{M: 1, N: 65536, K: 192, Out: ir.F32}, kernels.GEMMConfig{M: 1, N: 128, K: 16, Out: ir.F32}},    // B: 24 MiB
		{kernels.GEMMConfig{M: 256, N: 8192, K: 16, Out: ir.BF16}, kernels.GEMMConfig{M: 16, N: 128, K: 16, Out: ir.BF16}}, // C and its reference: 4 + 16 MiB
		{kernels.CopyConfig{Rows: 8192}, kernels.CopyConfig{Rows: 64}},                                                     // 8 MiB in, 8 out
		{kernels.MMALoopConfig{CTAs: 128, Iters: 1}, kernels.MMALoopConfig{CTAs: 1, Iters: 1}},                             // C: 8 MiB, reference 16
		{mlaOf(4096), mlaOf(256)}, // the pool: 5 MiB, the reference's vectors 16 MiB
	} {
		t.Run(fmt.Sprintf("%T", c.large), func(t *testing.T) {
			peak, est := measuredCheck(t, c.large)
			if peak > est {
				t.Errorf("the check held %.1f MiB at its peak, more than the %.1f MiB estimated", peak/(1<<20), est/(1<<20))
			}
			// The sampler can miss a short peak (never add one): the small case's,
			// missed, would inflate the growth, so it is the most of three runs.
			var peak0, est0 float64
			for range 3 {
				p, e := measuredCheck(t, c.small)
				peak0, est0 = max(peak0, p), e
			}
			if peak0 > est0 {
				t.Errorf("the small check held %.1f MiB at its peak, more than the %.1f MiB estimated", peak0/(1<<20), est0/(1<<20))
			}
			if grew, counted := peak-peak0, est-est0; grew > counted+1<<20 {
				t.Errorf("from the small check to the large one the peak grew %.1f MiB, the estimate %.1f MiB", grew/(1<<20), counted/(1<<20))
			}
		})
	}
}

// TestProgramHostBytesCoversMeasured: what ForProgram admits a program of one's own
// with is at least the heap its check holds, on seeded inputs with a large buffer
// from -args and on a vector folder with a large x.bin (which held 8.3 GB at its peak
// for a 2 GB file: read by growing a buffer, then copied three times).
func TestProgramHostBytesCoversMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("holds buffers of tens of MB")
	}
	src, err := os.ReadFile("../ptxgen/testdata/from/scale.ir")
	if err != nil {
		t.Fatal(err)
	}
	comp := compileText(t, string(src))
	const xBytes = 24 << 20
	seed := uint64(9)
	r := rand.New(rand.NewPCG(seed, 0))
	x := make([]byte, xBytes)
	for i := 0; i < xBytes; i += 4 {
		binary.LittleEndian.PutUint32(x[i:], math.Float32bits(float32(r.NormFloat64())))
	}
	want := make([]byte, 8*1000)
	for i := range 1000 {
		binary.LittleEndian.PutUint64(want[8*i:], math.Float64bits(0.5*float64(math.Float32frombits(binary.LittleEndian.Uint32(x[4*i:])))))
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"x.bin": x, "y.want.f64": want,
		"meta.json": []byte(`{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"alpha": 0.5, "n": 1000}}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x = nil
	for _, opts := range []ProgramOptions{
		{Seed: seed, Args: map[string]string{"alpha": "0.5", "n": "1000", "x": fmt.Sprint(xBytes)}},
		{Vectors: dir},
	} {
		var admitted int64
		var runErr error
		peak := peakHeapBytes(func() {
			c, err := ForProgram(comp, opts)
			if err != nil {
				runErr = err
				return
			}
			admitted = c.AdmittedBytes
			res, err := Run(Emulator{}, c)
			if err == nil && !res.OK() {
				err = fmt.Errorf("%s", res)
			}
			runErr = err
		})
		if runErr != nil {
			t.Fatalf("%+v (seed %d): %v", opts, seed, runErr)
		}
		t.Logf("%+v: admitted with %.1f MiB, measured peak %.1f MiB", opts, float64(admitted)/(1<<20), peak/(1<<20))
		if peak > float64(admitted) {
			t.Errorf("%+v: the check held %.1f MiB at its peak, more than the %.1f MiB it was admitted with", opts, peak/(1<<20), float64(admitted)/(1<<20))
		}
	}
}

// peakHeapBytes is memtest.PeakHeapBytes in the float64 the estimates are compared in.
func peakHeapBytes(f func()) float64 { return float64(memtest.PeakHeapBytes(f)) }
