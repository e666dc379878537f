package check

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/kernels"
)

// TestCeilingKernels: the kernels the bench times for its roofline, and the
// read-back of its clean L2 flush, are correct (the read-back's 7 tiles over 3
// CTAs leave the last one short), and the copy moves 16 bytes per access both
// ways (or it would not measure bandwidth).
func TestCeilingKernels(t *testing.T) {
	cp, err := Copy(kernels.CopyConfig{Rows: 300}, tgt("sm_90"), 3)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := MMALoop(kernels.MMALoopConfig{CTAs: 2, Iters: 7}, tgt("sm_80"), 4)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ReadBack(kernels.ReadBackConfig{Words: 4096 * 7, CTAs: 3}, tgt("sm_90"), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Case{cp, mm, rb} {
		passesInEmulator(t, c)
	}
	text := cp.Compiled.Module.Print()
	for _, s := range []string{"cp.async.cg.shared.global", "ld.shared.v4.b32", "st.global.v4.b32"} {
		if !strings.Contains(text, s) {
			t.Errorf("copy lacks %q", s)
		}
	}
}
