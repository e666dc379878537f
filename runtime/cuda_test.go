//go:build cuda && cgo

package runtime

// GPU tests: they need a CUDA driver and a GPU of compute capability 8.0 or newer. Build
// them here with `make gpu-bin` (build/runtime.test) and run that binary on the GPU
// machine, which has no Go toolchain.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// dev is the one device all tests share: opening a context costs hundreds of milliseconds.
var dev *Device

func TestMain(m *testing.M) {
	var err error
	dev, err = Open(0)
	if err != nil {
		// This binary only exists to run on a GPU: no device is a failure, not a skip.
		fmt.Fprintln(os.Stderr, "runtime tests:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "runtime tests on", dev)
	code := m.Run()
	if err := dev.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDeviceInfo(t *testing.T) {
	if !regexp.MustCompile(`^sm_[1-9][0-9]+$`).MatchString(dev.Arch()) {
		t.Errorf("Arch() = %q", dev.Arch())
	}
	if dev.SMs() <= 0 || dev.Name() == "" || dev.DriverVersion() < 11000 || dev.TotalMem() <= 0 {
		t.Errorf("implausible device: %v, %d bytes", dev, dev.TotalMem())
	}
	if dev.MaxSharedBytes() < 99<<10 {
		t.Errorf("MaxSharedBytes() = %d, want >= 99 KiB on any sm_80+ GPU", dev.MaxSharedBytes())
	}
	got, err := dev.Pick([]string{"sm_80", "sm_90", "sm_120"})
	check(t, err)
	t.Logf("%v; Pick(sm_80, sm_90, sm_120) = %s", dev, got)
	if dev.cc >= 90 && dev.cc < 120 && got != "sm_90" {
		t.Errorf("Pick = %s on %s, want sm_90", got, dev.Arch())
	}
}

func TestBufferRoundTrip(t *testing.T) {
	b, err := dev.Alloc(64)
	check(t, err)
	defer b.Free()
	bf := []uint16{0x3f80, 0xbf80, 0x7f80, 0xffff, 1, 2, 3, 4}
	check(t, b.CopyInBF16(bf))
	gotBF := make([]uint16, len(bf))
	check(t, b.CopyOutBF16(gotBF))
	if fmt.Sprint(gotBF) != fmt.Sprint(bf) {
		t.Errorf("bf16 round trip: %x, want %x", gotBF, bf)
	}
	i32 := []int32{-1, math.MaxInt32, math.MinInt32, 7}
	check(t, b.CopyInI32(i32))
	gotI := make([]int32, 4)
	check(t, b.CopyOutI32(gotI))
	if fmt.Sprint(gotI) != fmt.Sprint(i32) {
		t.Errorf("i32 round trip: %v, want %v", gotI, i32)
	}
	check(t, b.Zero())
	u8 := make([]uint8, 64)
	check(t, b.CopyOutU8(u8))
	for i, v := range u8 {
		if v != 0 {
			t.Fatalf("byte %d = %d after Zero", i, v)
		}
	}
	if err := b.CopyIn(make([]byte, 65)); err == nil {
		t.Error("a 65-byte copy into a 64-byte buffer was accepted")
	}
}

func TestVecAdd(t *testing.T) {
	const blocks, n = 4, 1000 // 1024 threads; the last 24 must leave out untouched
	const size = blocks * 256
	k, err := dev.LoadKernel(vaddKernel(n, blocks))
	check(t, err)
	defer k.Unload()
	t.Logf("vadd: %d registers, %d bytes local; JIT log:\n%s", k.Registers, k.LocalBytes, k.JITLog)

	a, b, sentinel := make([]float32, size), make([]float32, size), make([]float32, size)
	for i := range a {
		a[i] = float32(i)
		b[i] = float32(3000 - 2*i)
		sentinel[i] = -7
	}
	da, err := dev.FromF32(a)
	check(t, err)
	defer da.Free()
	db, err := dev.FromF32(b)
	check(t, err)
	defer db.Free()
	dout, err := dev.FromF32(sentinel)
	check(t, err)
	defer dout.Free()

	check(t, k.Launch(Ptr(da), Ptr(db), Ptr(dout), F32(0.5), U32(n)))
	out := make([]float32, size)
	check(t, dout.CopyOutF32(out))
	for i, got := range out {
		want := float32(-7)
		if i < n {
			want = a[i] + b[i]*0.5 // exact: small integers and halves
		}
		if got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}

	ms, err := dev.Time(func() error {
		for range 10 {
			if err := k.Launch(Ptr(da), Ptr(db), Ptr(dout), F32(0.5), U32(n)); err != nil {
				return err
			}
		}
		return nil
	})
	check(t, err)
	if !(ms > 0) {
		t.Errorf("Time = %v ms, want > 0", ms)
	}
	t.Logf("10 launches: %.3f ms", ms)

	// Argument checks happen before the driver sees anything.
	var ae *ArgError
	if err := k.Launch(Ptr(da), Ptr(db), Ptr(dout), I32(n), F32(0.5)); !errors.As(err, &ae) || ae.Name != "alpha" {
		t.Errorf("swapped scalars: %v, want an ArgError for alpha", err)
	}
	small, err := dev.Alloc(16)
	check(t, err)
	defer small.Free()
	if err := k.Launch(Ptr(da), Ptr(small), Ptr(dout), F32(0.5), U32(n)); !errors.As(err, &ae) || ae.Name != "pb" {
		t.Errorf("small buffer: %v, want an ArgError for pb", err)
	}
}

// TestLaunchOnStream: kernels queued on streams of the caller's run there: each stream's
// result is complete after its own Sync; a closed stream is refused before the driver.
func TestLaunchOnStream(t *testing.T) {
	const blocks, n = 4, 1000
	const size = blocks * 256
	k, err := dev.LoadKernel(vaddKernel(n, blocks))
	check(t, err)
	defer k.Unload()
	a, b := make([]float32, size), make([]float32, size)
	for i := range a {
		a[i], b[i] = float32(i), float32(2*i)
	}
	da, err := dev.FromF32(a)
	check(t, err)
	defer da.Free()
	db, err := dev.FromF32(b)
	check(t, err)
	defer db.Free()
	for _, alpha := range []float32{0.5, 2} {
		s, err := dev.NewStream()
		check(t, err)
		out, err := dev.Alloc(size * 4)
		check(t, err)
		check(t, k.LaunchOn(s, Ptr(da), Ptr(db), Ptr(out), F32(alpha), U32(n)))
		check(t, s.Sync())
		got := make([]float32, size)
		check(t, out.CopyOutF32(got))
		for i := range n {
			if want := a[i] + b[i]*alpha; got[i] != want {
				t.Fatalf("alpha %v: out[%d] = %v, want %v", alpha, i, got[i], want)
			}
		}
		check(t, out.Free())
		check(t, s.Close())
		if err := k.LaunchOn(s, Ptr(da), Ptr(db), Ptr(da), F32(alpha), U32(n)); !errors.Is(err, ErrClosed) {
			t.Errorf("a launch on a closed stream: %v, want ErrClosed", err)
		}
	}
}

// bf16 returns the bf16 bits of a float32 that bf16 represents exactly.
func bf16(x float32) uint16 { return uint16(math.Float32bits(x) >> 16) }

func TestMMA(t *testing.T) {
	k, err := dev.LoadPTX(readPTX(t, "mma_bf16.ptx"), mmaFacts())
	check(t, err)
	defer k.Unload()
	// Small integers: every product and sum is exact in f32, so the result must match
	// bit for bit whatever order the tensor core adds in.
	var A [16][16]float32
	var B [16][8]float32
	a := make([]uint16, 16*16)
	bt := make([]uint16, 8*16) // B transposed: [n][k]
	for i := range 16 {
		for j := range 16 {
			A[i][j] = float32((i*3+j*5)%7 - 3)
			a[i*16+j] = bf16(A[i][j])
		}
	}
	for kk := range 16 {
		for n := range 8 {
			B[kk][n] = float32((kk*2+n*7)%9 - 4)
			bt[n*16+kk] = bf16(B[kk][n])
		}
	}
	da, err := dev.FromBF16(a)
	check(t, err)
	defer da.Free()
	db, err := dev.FromBF16(bt)
	check(t, err)
	defer db.Free()
	dd, err := dev.Alloc(16 * 8 * 4)
	check(t, err)
	defer dd.Free()
	check(t, k.Launch(Ptr(da), Ptr(db), Ptr(dd)))
	d := make([]float32, 16*8)
	check(t, dd.CopyOutF32(d))
	for i := range 16 {
		for n := range 8 {
			var want float32
			for kk := range 16 {
				want += A[i][kk] * B[kk][n]
			}
			if got := d[i*8+n]; got != want {
				t.Errorf("D[%d][%d] = %v, want %v", i, n, got, want)
			}
		}
	}
}

func TestDynamicShared100K(t *testing.T) {
	k, err := dev.LoadPTX(readPTX(t, "smem100k.ptx"), smemFacts())
	check(t, err)
	defer k.Unload()
	out, err := dev.Alloc(smemWords * 4)
	check(t, err)
	defer out.Free()
	check(t, k.Launch(Ptr(out)))
	check(t, dev.Sync())
	got := make([]int32, smemWords)
	check(t, out.CopyOutI32(got))
	for i, v := range got {
		if want := int32(3*(smemWords-1-i) + 1); v != want {
			t.Fatalf("out[%d] = %d, want %d", i, v, want)
		}
	}
}

func TestJITErrorLog(t *testing.T) {
	facts := &ptx.Kernel{Name: "bad", Grid: [3]int{1, 1, 1}, Block: 32, Params: []ptx.KParam{{Name: "pd", Kind: "ptr"}}}
	_, err := dev.LoadPTX(readPTX(t, "bad.ptx"), facts)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("LoadPTX(bad.ptx) = %v, want a *LoadError", err)
	}
	if !strings.Contains(le.Log, "line 13") {
		t.Errorf("JIT error log does not name line 13:\n%s", le.Log)
	}
	if strings.ContainsRune(le.Log, 0) {
		t.Error("JIT log holds NUL bytes")
	}
	t.Logf("%v", err)
}

func TestTooMuchShared(t *testing.T) {
	f := smemFacts()
	f.SharedBytes = dev.MaxSharedBytes() + 1
	if _, err := dev.LoadPTX(readPTX(t, "smem100k.ptx"), f); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("LoadPTX with %d bytes of shared memory: %v, want a shared-memory error", f.SharedBytes, err)
	}
}
