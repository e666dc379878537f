package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snapshot reads every file of dir, by name.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

// sameFiles reports how after differs from before: files added, removed or changed.
func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, data := range before {
		got, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s was removed", name)
		case got != data:
			t.Errorf("%s was changed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was added", name)
		}
	}
}

// TestGenKeepsFilesOfAnotherConsumer: a manifest alone whose PTX names are those of a
// launcher in the folder (k.json beside k.go) would overwrite the PTX the launcher embeds
// and remove its other targets', so the package no longer builds; the reverse, a launcher
// over the PTX files a manifest alone names, would leave the manifest describing other
// kernels. Both are refused (exit 2) naming the file that uses them, and nothing changes.
func TestGenKeepsFilesOfAnotherConsumer(t *testing.T) {
	t.Setenv("GOPACKAGE", "")
	copyArgs := []string{"gen", "-kernel", "copy", "-rows", "64"}
	for _, c := range []struct {
		name          string
		first, second []string
		wantErr       []string
	}{
		{"launcher over the PTX of a manifest written with it, another configuration",
			[]string{"-targets", "sm_120", "-pkg", "k", "-o", "k.go", "-manifest", "m.json"},
			[]string{"-rows", "128", "-targets", "sm_120", "-pkg", "k", "-o", "k.go"},
			[]string{"-o k.go", "m.json", "k_sm_120.ptx", "-manifest m.json"}},
		{"manifest over a launcher's PTX",
			[]string{"-targets", "sm_120,sm_90", "-pkg", "k", "-o", "k.go"},
			[]string{"-targets", "sm_120", "-manifest", "k.json"},
			[]string{"-manifest k.json", "k.go", "k_sm_90.ptx", "-o k.go"}},
		{"launcher over a manifest's PTX",
			[]string{"-targets", "sm_120,sm_90", "-manifest", "k.json"},
			[]string{"-targets", "sm_120", "-pkg", "k", "-o", "k.go"},
			[]string{"-o k.go", "k.json", "k_sm_90.ptx", "-manifest k.json"}},
	} {
		dir := t.TempDir()
		inDir := func(args []string) []string {
			out := append([]string(nil), copyArgs...)
			for _, a := range args {
				if strings.HasSuffix(a, ".go") || strings.HasSuffix(a, ".json") {
					a = filepath.Join(dir, a)
				}
				out = append(out, a)
			}
			return out
		}
		if code, _, errOut := runCLI(inDir(c.first)...); code != 0 {
			t.Fatalf("%s: first gen: exit %d: %s", c.name, code, errOut)
		}
		before := snapshot(t, dir)
		code, _, errOut := runCLI(inDir(c.second)...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line", c.name, code, errOut)
		}
		msg := strings.ReplaceAll(errOut, dir+string(filepath.Separator), "")
		for _, w := range c.wantErr {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not name %q", c.name, msg, w)
			}
		}
		sameFiles(t, before, snapshot(t, dir))
	}

	// Regenerating both together, a manifest alone under its own name, or one that
	// leaves the launcher's PTX as it is, is fine.
	dir := t.TempDir()
	both := append(append([]string(nil), copyArgs...), "-pkg", "k", "-o", filepath.Join(dir, "k.go"), "-manifest", filepath.Join(dir, "k.json"))
	for _, ts := range []string{"sm_120,sm_90", "sm_120"} {
		if code, _, errOut := runCLI(append(both, "-targets", ts)...); code != 0 {
			t.Fatalf("-o and -manifest, -targets %s: exit %d: %s", ts, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "k_sm_90.ptx")); err == nil {
		t.Errorf("k_sm_90.ptx is left after regenerating both for sm_120 alone")
	}
	alone := append(append([]string(nil), copyArgs...), "-targets", "sm_120", "-manifest", filepath.Join(dir, "other.json"))
	if code, _, errOut := runCLI(alone...); code != 0 {
		t.Fatalf("a manifest of its own name beside a launcher: exit %d: %s", code, errOut)
	}
	same := append(append([]string(nil), copyArgs...), "-targets", "sm_120", "-manifest", filepath.Join(dir, "k.json"))
	before := snapshot(t, dir)
	if code, _, errOut := runCLI(same...); code != 0 {
		t.Fatalf("a manifest alone over the launcher's PTX, unchanged: exit %d: %s", code, errOut)
	}
	if after := snapshot(t, dir); after["k_sm_120.ptx"] != before["k_sm_120.ptx"] || after["k.go"] != before["k.go"] {
		t.Errorf("the manifest alone changed the launcher or its PTX")
	}
}

// TestGenFailureKeepsOldFiles: a regeneration that cannot write a file in full (here
// past a file-size limit, as on a full disk) leaves every file of the previous run as
// it was, and no temporary file behind: it used to leave the old launcher embedding a
// truncated PTX file.
//
// The limit is set in a child process (this test binary, run again): in the test
// process it would also cut the test framework's own log files short.
func TestGenFailureKeepsOldFiles(t *testing.T) {
	if limit := os.Getenv(fsizeChildEnv); limit != "" {
		genUnderFileSizeLimit(limit, os.Getenv(fsizeDirEnv))
		return
	}
	dir := t.TempDir()
	if code, _, errOut := runCLI(gemmGenArgs(dir, "16")...); code != 0 {
		t.Fatalf("first gen: exit %d: %s", code, errOut)
	}
	before := snapshot(t, dir)
	smallest := len(before["k.go"])
	for _, data := range before {
		smallest = min(smallest, len(data))
	}
	child := exec.Command(os.Args[0], "-test.run=^TestGenFailureKeepsOldFiles$")
	child.Env = append(os.Environ(), fsizeChildEnv+"="+strconv.Itoa(smallest/2), fsizeDirEnv+"="+dir)
	out, err := child.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "file too large") {
		t.Errorf("gen past a file-size limit of %d bytes: %v, output %q; want exit 2 and the write error", smallest/2, err, out)
	}
	sameFiles(t, before, snapshot(t, dir))
}

const (
	fsizeChildEnv = "PTXGEN_TEST_FSIZE_LIMIT"
	fsizeDirEnv   = "PTXGEN_TEST_FSIZE_DIR"
)

func gemmGenArgs(dir, m string) []string {
	return []string{"gen", "-kernel", "gemm", "-m", m, "-n", "16", "-k", "16", "-targets", "sm_120,sm_90",
		"-pkg", "k", "-o", filepath.Join(dir, "k.go"), "-manifest", filepath.Join(dir, "k.json")}
}

// genUnderFileSizeLimit is the child's side: it regenerates dir's kernel with a larger
// M under a file-size limit of limit bytes and exits with gen's code, its stderr on
// the child's stderr (a pipe, which the limit does not cover).
func genUnderFileSizeLimit(limit, dir string) {
	n, err := strconv.ParseUint(limit, 10, 64)
	if err != nil || dir == "" {
		fmt.Fprintf(os.Stderr, "bad %s=%q or %s=%q\n", fsizeChildEnv, limit, fsizeDirEnv, dir)
		os.Exit(3)
	}
	// Writes past the limit fail with EFBIG (SIGXFSZ ignored) instead of killing the child.
	signal.Ignore(syscall.SIGXFSZ)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, "no RLIMIT_FSIZE:", err)
		os.Exit(3)
	}
	rl.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, "cannot lower RLIMIT_FSIZE:", err)
		os.Exit(3)
	}
	os.Exit(run(gemmGenArgs(dir, "32"), io.Discard, os.Stderr))
}

// TestGenNeverWritesThroughASwappedLink: a process that swaps one of gen's PTX files
// for a symbolic link to a file outside the folder, between gen's checks and its write,
// never gets that file written (gen used to write through the link within 4-20 runs).
func TestGenNeverWritesThroughASwappedLink(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.ptx")
	const victimData = "someone else's file\n"
	if err := os.WriteFile(victim, []byte(victimData), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ptxFile := filepath.Join(dir, "k_sm_120.ptx")
	gen := func(rows int) int {
		code, _, _ := runCLI("gen", "-kernel", "copy", "-rows", strconv.Itoa(rows), "-targets", "sm_120", "-pkg", "k", "-o", filepath.Join(dir, "k.go"))
		return code
	}
	if code := gen(64); code != 0 {
		t.Fatalf("first gen: exit %d", code)
	}
	// A genuine PTX file to put back by a hard link, which is quicker than writing one.
	genuine := filepath.Join(outside, "genuine.ptx")
	if err := os.Link(ptxFile, genuine); err != nil {
		t.Skip("no hard links:", err)
	}
	// The swapper keeps a genuine PTX file there (so that gen's checks pass) but for a
	// few microseconds at a time a link to the file outside, each put by a rename: the
	// name is never missing.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			link, back := filepath.Join(dir, fmt.Sprintf(".link%d", i)), filepath.Join(dir, fmt.Sprintf(".back%d", i))
			os.Symlink(victim, link)
			os.Link(genuine, back)
			os.Rename(link, ptxFile)
			os.Rename(back, ptxFile)
			time.Sleep(time.Duration(20+i%100) * time.Microsecond)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	runs := 0
	codes := map[int]int{}
	for ; runs < 2000 && time.Now().Before(deadline); runs++ {
		codes[gen(64+64*(runs%2))]++ // alternate configurations, so every run writes
		if got, _ := os.ReadFile(victim); string(got) != victimData {
			break
		}
	}
	close(stop)
	<-done
	if got, _ := os.ReadFile(victim); string(got) != victimData {
		t.Fatalf("gen wrote through the swapped link after %d runs: %.60q", runs, got)
	}
	t.Logf("%d runs (exit statuses %v), the file outside untouched", runs, codes)
}
