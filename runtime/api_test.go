package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// The same API must exist in the cuda build and in the stub: this file compiles in both
// (go vet -tags cuda type-checks it), so a method added to one build only fails here.
var _ = struct {
	open    func(int) (*Device, error)
	close   func(*Device) error
	sync    func(*Device) error
	load    func(*Device, *ptx.Kernel) (*Kernel, error)
	loadPTX func(*Device, string, *ptx.Kernel) (*Kernel, error)
	alloc   func(*Device, int64) (*Buffer, error)
	time    func(*Device, func() error) (float32, error)
	pick    func(*Device, []string) (string, error)
	launch  func(*Kernel, ...Arg) error
	unload  func(*Kernel) error
	copyIn  func(*Buffer, []byte) error
	copyOut func(*Buffer, []byte) error
	zero    func(*Buffer) error
	free    func(*Buffer) error
	fromF32 func(*Device, []float32) (*Buffer, error)
	// Streams: a kernel queued on one the caller made, not only the default stream.
	newStream   func(*Device) (*Stream, error)
	launchOn    func(*Kernel, *Stream, ...Arg) error
	streamSync  func(*Stream) error
	streamClose func(*Stream) error
}{
	Open, (*Device).Close, (*Device).Sync, (*Device).LoadKernel, (*Device).LoadPTX, (*Device).Alloc,
	(*Device).Time, (*Device).Pick, (*Kernel).Launch, (*Kernel).Unload, (*Buffer).CopyIn,
	(*Buffer).CopyOut, (*Buffer).Zero, (*Buffer).Free, (*Device).FromF32,
	(*Device).NewStream, (*Kernel).LaunchOn, (*Stream).Sync, (*Stream).Close,
}

// TestCheckStream: the stream a launch names is checked before the driver sees it, in
// every build: nil is the default stream; a closed stream, or one of another device, is
// refused.
func TestCheckStream(t *testing.T) {
	d, other := &Device{ordinal: 0}, &Device{ordinal: 1}
	k := &Kernel{Facts: gemmFacts(), dev: d}
	if err := k.checkStream(nil); err != nil {
		t.Errorf("the default stream (nil): %v", err)
	}
	if err := k.checkStream(&Stream{dev: d}); err != nil {
		t.Errorf("a stream of the kernel's device: %v", err)
	}
	if err := k.checkStream(&Stream{dev: other}); err == nil || !strings.Contains(err.Error(), "stream of GPU 1") || !strings.Contains(err.Error(), "GPU 0") {
		t.Errorf("a stream of another device: %v, want a refusal naming both", err)
	}
	if err := k.checkStream(&Stream{dev: d, closed: true}); !errors.Is(err, ErrClosed) {
		t.Errorf("a closed stream: %v, want ErrClosed", err)
	}
}

// TestBufferChecksBeforeDriver checks the host-side guards that run in every build.
func TestBufferChecksBeforeDriver(t *testing.T) {
	b := &Buffer{ptr: 0x1000, size: 8}
	if err := b.checkCopy("in", 12); err == nil {
		t.Error("a 12-byte copy into an 8-byte buffer was accepted")
	}
	if err := b.checkCopy("out", 8); err != nil {
		t.Errorf("an exact-size copy was rejected: %v", err)
	}
	b.freed = true
	if err := b.checkCopy("in", 4); !errors.Is(err, ErrClosed) {
		t.Errorf("copy into a freed buffer: %v, want ErrClosed", err)
	}
	if got := bytesOf([]float32{1, 2, 3}); len(got) != 12 || got[2] != 0x80 || got[3] != 0x3f {
		t.Errorf("bytesOf([]float32{1,2,3}) = %x", got)
	}
	if got := bytesOf([]uint16(nil)); got != nil {
		t.Errorf("bytesOf(nil) = %x", got)
	}
}

func TestCheckLoad(t *testing.T) {
	d := &Device{arch: "sm_90", cc: 90, smemOptin: 227 << 10}
	k := gemmFacts()
	k.Module = &ptx.Module{Version: "8.7", Target: "sm_120", Funcs: []*ptx.Func{{Name: "gemm", Params: []ptx.Param{{Type: "u64"}, {Type: "u64"}, {Type: "s32"}, {Type: "f32"}}}}}
	if err := d.checkLoad(k); err == nil {
		t.Error("an sm_120 kernel was accepted for an sm_90 device")
	}
	k.Module.Target = "sm_80"
	if err := d.checkLoad(k); err != nil {
		t.Errorf("an sm_80 kernel was rejected for an sm_90 device: %v", err)
	}
	k.SharedBytes = 228 << 10
	if err := d.checkLoad(k); err == nil {
		t.Error("228 KiB of shared memory was accepted on a 227 KiB device")
	}
}
