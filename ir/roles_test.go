package ir

import (
	"strings"
	"testing"
)

const rolesKernel = `kernel k(%x: ptr<f32> div 16 bytes 4096, %y: ptr<f32> div 16 bytes 4096) grid(1, 1, 1) warps 6 role mma 0 4 role load 4 2 {
  %lo = const 0 : i32
  %hi = const 8 : i32
  %r = iota : tile<16xi32>
  %o = cast %r : tile<16xi64>
  %z = const 0 : i64
  for %i = %lo to %hi step 1 stages 2 {
    %t = load %x[%o, %z] : tile<16x16xf32> on load
    %u = mul %t, %t : tile<16x16xf32> on mma
    store %y[%o, %z], %u on mma
  }
  for %j = %lo to %hi step 1 on load {
    %v = load %x[%o, %z] : tile<16x16xf32> on load
  }
}
`

// TestRolesRoundTrip: role declarations and placements print and read back.
func TestRolesRoundTrip(t *testing.T) {
	k, err := Parse(rolesKernel)
	if err != nil {
		t.Fatal(err)
	}
	if got := Print(k); got != rolesKernel {
		t.Errorf("printed\n%s\nwant\n%s", got, rolesKernel)
	}
	if r, ok := k.Role("load"); !ok || r.First != 4 || r.Warps != 2 {
		t.Errorf("role load is %+v, %v; want warps 4..5", r, ok)
	}
}

// TestRolesRefused: bad declarations and placements are refused, naming the role
// and what is accepted.
func TestRolesRefused(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"role load 4 2", "role load 4 3", "role load is warps 4..6 (first 4, 3 warps); the CTA has warps 0..5"},
		{"role load 4 2", "role load 3 2", "roles mma and load both hold warp 3"},
		{"role load 4 2", "role mma 4 2", "role mma declared twice"},
		{"role load 4 2", "role 9x 4 2", `role name "9x"`},
		{"role load 4 2", "role load 4 0", "at least one"},
		{": tile<16x16xf32> on mma", ": tile<16x16xf32> on dma", `placed on role "dma", which the kernel does not declare`},
		{"%v = load %x[%o, %z] : tile<16x16xf32> on load", "%v = load %x[%o, %z] : tile<16x16xf32> on mma", `in the body of a loop on role "load" but placed on "mma"`},
	} {
		src := strings.Replace(rolesKernel, c.from, c.to, 1)
		if src == rolesKernel {
			t.Fatalf("%q is not in the kernel", c.from)
		}
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: %v, want an error with %q", c.from, c.to, err, c.want)
		}
	}
	b := NewBuilder("k")
	b.SetWarps(2)
	b.DeclareRole("a", 0, 1)
	b.OnRole("b", func() {})
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), `role "b" is not declared`) {
		t.Errorf("OnRole of an undeclared role: %v", err)
	}
	b = NewBuilder("k")
	b.SetWarps(2)
	b.DeclareRole("a", 0, 1)
	b.OnRole("a", func() { b.OnRole("a", func() {}) })
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "roles do not nest") {
		t.Errorf("nested OnRole: %v", err)
	}
}
