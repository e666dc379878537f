package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLIWithin is runCLI that fails the test instead of hanging when the command runs
// longer than limit (a role that overflowed spun the warp-grid search forever).
func runCLIWithin(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		c, o, e := runCLI(args...)
		done <- result{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(limit):
		t.Fatalf("ptxgen %q still runs after %v", args, limit)
		return 0, "", ""
	}
}

// TestFromRefusesOverflowingIR: the reproductions of issue 29 (section 3) from the
// testdata kernels, each refused by dump and gen in one line with exit 2. They used to
// spin forever (a role of 2^63-1 warps from warp 1), write `bar.sync 2, -32` with exit 0
// (a role of 2^63-1 warps from warp 4, or of 1 warp from warp 2^63-1), run out of host
// memory (a tile of 2^20 x 2^44 elements, wrapping to 0) or print a step past i32 as
// an s32 immediate.
func TestFromRefusesOverflowingIR(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join("testdata", "from")
	phased, roles, scale := readFile(t, filepath.Join(from, "phased.ir")), readFile(t, filepath.Join(from, "roles.ir")), readFile(t, filepath.Join(from, "scale.ir"))
	for _, c := range []struct {
		name, src, from, to, want string
	}{
		{"phased_role", phased, "role score 0 4", "role score 1 9223372036854775807",
			"role score is warps 1..9223372036854775807 (first 1, 9223372036854775807 warps); the CTA has warps 0..7 and a role at least one"},
		{"roles_warps", roles, "role load 4 2", "role load 4 9223372036854775807",
			"role load is warps 4..9223372036854775810 (first 4, 9223372036854775807 warps); the CTA has warps 0..5 and a role at least one"},
		{"roles_first", roles, "role load 4 2", "role load 9223372036854775807 1",
			"role load is warps 9223372036854775807..9223372036854775807 (first 9223372036854775807, 1 warps); the CTA has warps 0..5 and a role at least one"},
		{"roles_step", roles, "step 1", "step 4294967297",
			"step 4294967297: want 1..2147483647 (the induction variable is an i32)"},
		{"roles_perrow", roles, "%y: ptr<f32> div 16 bytes 16384", "%y: ptr<f32> div 16 bytes 4611686018427387904",
			"parameter %y: bytes 4611686018427387904, want 0..281474976710656"},
		{"scale_tile", scale, "{\n", "{\n  %huge = const 1.0 : tile<1048576x17592186044416xf32>\n",
			"tile of 18446744073709551616 elements exceeds the limit of 1048576"},
	} {
		src := strings.Replace(c.src, c.from, c.to, 1)
		if src == c.src {
			t.Fatalf("%s: %q is not in the file", c.name, c.from)
		}
		path := writeFile(t, dir, c.name+".ir", src)
		for _, args := range [][]string{
			{"dump", "-from", path, "-target", "sm_90"},
			{"gen", "-from", path, "-targets", "sm_90", "-pkg", "p", "-o", filepath.Join(dir, c.name+".go")},
		} {
			code, out, errOut := runCLIWithin(t, time.Minute, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("ptxgen %q: exit %d, stdout %.200q, stderr %q; want exit 2 and one line with %q", args, code, out, errOut, c.want)
			}
		}
	}
}

// TestFromPhasedLoopEndingOnRole: issue 29's loop that places only its dot on a role
// and stores the carried result on that role (it panicked in coordsOf) is dumped,
// generated and run clean in the emulator.
func TestFromPhasedLoopEndingOnRole(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "tail.ir", `kernel tail(%a: ptr<bf16> div 16 bytes 8192, %y: ptr<f32> div 16 bytes 16384) grid(1, 1, 1) warps 6 role mma 0 4 {
  %r = iota : tile<64xi32>
  %rows = cast %r : tile<64xi64>
  %n = const 64 : i64
  %arows = mul %rows, %n : tile<64xi64>
  %z = const 0 : i64
  %zero = const 0.0 : tile<64x64xf32> on mma
  %lo = const 0 : i32
  %hi = const 2 : i32
  %acc = for %j = %lo to %hi step 1 iter(%c = %zero) {
    %at = load %a[%arows, %z] : tile<64x64xbf16>
    %next = dot %at, %at, %c : tile<64x64xf32> on mma
    yield %next
  }
  store %y[%arows, %z], %acc on mma
}
`)
	for _, args := range [][]string{
		{"dump", "-from", path, "-target", "sm_90"},
		{"gen", "-from", path, "-targets", "sm_90,sm_120", "-pkg", "p", "-o", filepath.Join(dir, "tail.go")},
		{"check", "-emu", "-from", path, "-target", "sm_90"},
	} {
		if code, _, errOut := runCLIWithin(t, 2*time.Minute, args...); code != 0 {
			t.Errorf("ptxgen %q: exit %d: %s", args, code, errOut)
		}
	}
}
