package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ptxgen/ptxgen/internal/doccheck"
)

// TestBadInputsDoc runs every ptxgen-gpu command docs/bad-inputs.md documents (each is
// refused before a device is opened) in a folder holding the files the page names, and
// compares the exit status and the first line with the page's.
func TestBadInputsDoc(t *testing.T) {
	page := "../../docs/bad-inputs.md"
	entries, err := doccheck.Parse(page, "ptxgen-gpu")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 10 {
		t.Fatalf("%d ptxgen-gpu entries in %s: the page's format changed?", len(entries), page)
	}
	vec, err := filepath.Abs("../../golden/testdata/vectors/mla_decode/h4_sink_edges")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "vec"), os.DirFS(vec)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.go"), 0o644); err != nil {
		t.Skip("no FIFOs:", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hand.ptx"), []byte("// written by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	noDevice := func(int) (device, error) { return nil, errors.New("no device") }
	for _, e := range entries {
		cmd := strings.Join(e.Args, " ")
		code, stdout, stderr := runCLI(noDevice, e.Args...)
		if code != e.Code {
			t.Errorf("%s:%d: ptxgen-gpu %s: exit %d, the page says %d (stderr %q)", page, e.Line, cmd, code, e.Code, stderr)
			continue
		}
		if e.Describes("ptxgen-gpu") {
			continue
		}
		got, _, _ := strings.Cut(stderr, "\n")
		if e.FromStdout() || stderr == "" {
			got, _, _ = strings.Cut(stdout, "\n")
		}
		if !e.Printed(got) {
			t.Errorf("%s:%d: ptxgen-gpu %s prints\n\t%s\nthe page says\n\t%s", page, e.Line, cmd, got, e.Text)
		}
	}
}
