package lower

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Exact-text tests of emitter functions: each writes into a bare emitter, and the
// instructions it wrote are compared with the PTX they must be, line for line.

// bareEmitter is an emitter for sm_90 with nothing emitted yet.
func bareEmitter() *emitter {
	tg := target.MustLookup("sm_90")
	return &emitter{f: &fn{target: tg}, nregs: map[string]int{}, version: tg.MinVersion}
}

// bodyText is the PTX of what e wrote, one instruction per line, without the
// function around it.
func bodyText(t *testing.T, e *emitter) string {
	t.Helper()
	m := &ptx.Module{Version: "7.8", Target: "sm_90", AddressSize: 64, Funcs: []*ptx.Func{{Name: "t", Body: e.body}}}
	var lines []string
	in := false
	for _, l := range strings.Split(m.Print(), "\n") {
		switch {
		case strings.HasPrefix(l, "{"):
			in = true
		case strings.HasPrefix(l, "}"):
			in = false
		case in && strings.TrimSpace(l) != "":
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, "\n")
}

// TestDivRemText: division and remainder of a non-negative i32 by constants, as
// divRemU32 writes them: a move, a shift or mask for powers of two, and Granlund
// and Montgomery's multiplication by a magic reciprocal otherwise.
func TestDivRemText(t *testing.T) {
	for _, c := range []struct {
		k    ir.OpKind
		d    int
		want string
	}{
		{ir.OpDiv, 1, "mov.u32 %r0, %r1;"},
		{ir.OpRem, 1, "mov.u32 %r0, 0;"},
		{ir.OpDiv, 8, "shr.u32 %r0, %r1, 3;"},
		{ir.OpRem, 8, "and.b32 %r0, %r1, 7;"},
		{ir.OpDiv, 7, strings.Join([]string{
			"mul.hi.s32 %r2, %r1, -1840700269;",
			"add.s32 %r2, %r2, %r1;",
			"shr.s32 %r2, %r2, 2;",
			"shr.u32 %r3, %r1, 31;",
			"add.s32 %r4, %r2, %r3;",
			"mov.u32 %r0, %r4;",
		}, "\n")},
	} {
		e := bareEmitter()
		r, a := e.reg(ir.I32), e.reg(ir.I32)
		e.divRemU32(c.k, r, a, c.d)
		if got := bodyText(t, e); got != c.want {
			t.Errorf("%s by %d:\n%s\nwant\n%s", c.k, c.d, got, c.want)
		}
	}
}

// TestLoopHeadText: a loop whose bounds are not constants known to run tests its
// first iteration before the top label; one with constant bounds that runs at least
// once enters without the test.
func TestLoopHeadText(t *testing.T) {
	e := bareEmitter()
	iv, hi := e.reg(ir.I32), e.reg(ir.I32)
	e.loopHead(iv, ptx.Imm(0), hi)
	want := strings.Join([]string{
		"setp.ge.s32 %p0, %r0, %r1;",
		"@%p0 bra.uni $L2;",
		"$L1:",
	}, "\n")
	if got := bodyText(t, e); got != want {
		t.Errorf("variable bound:\n%s\nwant\n%s", got, want)
	}
	e = bareEmitter()
	e.loopHead(e.reg(ir.I32), ptx.Imm(0), ptx.Imm(4))
	if got := bodyText(t, e); got != "$L1:" {
		t.Errorf("constant bounds 0..4:\n%s\nwant just the top label", got)
	}
}
