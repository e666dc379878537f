package ir

import (
	"strings"
	"testing"
)

// twoKernels is a split program: a partial kernel writing per-(row, chunk) results
// to a workspace buffer, and a combine reading them.
func twoKernels(t testing.TB) *Program {
	b := NewBuilder("partial")
	b.SetGrid(2, 8, 4)
	b.SetLatency(LatencySmall)
	b.BindGrid(1, b.Param("rows", ScalarOf(I32), 1, 0))
	b.BindGrid(2, b.SplitParam("chunks"))
	ws := b.ParamParts("ws", PtrTo(F32), 4, 8)
	b.Store1(ws, b.Cast(b.ProgramID(2), I64), nil, b.F32(1))
	partial, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	b = NewBuilder("combine")
	b.SetGrid(2, 8, 1)
	b.BindGrid(1, b.Param("rows", ScalarOf(I32), 1, 0))
	ws = b.ParamRows("ws", PtrTo(F32), 4, 32)
	out := b.ParamRows("out", PtrTo(F32), 4, 8)
	i := b.Cast(b.ProgramID(1), I64)
	b.Store1(out, i, nil, b.Load1(ws, i, nil))
	combine, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return &Program{Name: "split_sum", SMs: 132, Kernels: []*Kernel{partial, combine},
		Workspace: []Workspace{{Name: "ws", Bytes: 16, PerPart: 8}}}
}

// A program prints with its header and kernels in launch order and parses back to
// the same text; a lone kernel prints as before and reads back as its own program.
func TestProgramRoundTrip(t *testing.T) {
	p := twoKernels(t)
	text := PrintProgram(p)
	if !strings.HasPrefix(text, "program split_sum sms 132 {\n  workspace ws bytes 16 perpart 8\n}\n\nkernel partial(%rows: i32, %chunks: i32 split, ") {
		t.Fatalf("printed program:\n%s", text)
	}
	back, err := ParseProgram(text)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	if got := PrintProgram(back); got != text {
		t.Fatalf("round trip changed the program:\n%s\n%s", text, got)
	}
	if back.Name != "split_sum" || back.SMs != 132 || len(back.Kernels) != 2 || back.Kernels[1].Name != "combine" || back.Workspace[0] != p.Workspace[0] {
		t.Fatalf("parsed program %+v", back)
	}
	one := &Program{Name: "partial", Kernels: p.Kernels[:1]}
	if got, want := PrintProgram(one), Print(p.Kernels[0]); got != want {
		t.Fatalf("a lone kernel prints as\n%s\nwant\n%s", got, want)
	}
	back, err = ParseProgram(Print(p.Kernels[0]))
	if err != nil || back.Name != "partial" || len(back.Kernels) != 1 || back.Workspace != nil {
		t.Fatalf("a lone kernel parses as %+v, %v", back, err)
	}
}

// Programs the launchers could not run are refused, naming the program, kernel,
// buffer or parameter.
func TestProgramErrors(t *testing.T) {
	text := PrintProgram(twoKernels(t))
	partial, combine, _ := strings.Cut(text[strings.Index(text, "kernel partial"):], "\nkernel combine")
	combine = "kernel combine" + combine
	header := func(h string) string { return h + "\n" + partial + combine }
	for _, c := range []struct{ name, src, want string }{
		{"two kernels without a header", partial + combine,
			"ir: parse: line 7: a second kernel needs a program header before the first (program NAME { workspace ... }): the kernels then launch in the order they appear"},
		{"Parse of a program", partial + combine, "a second kernel: this file is a program (ParseProgram reads it)"},
		{"program name", header("program 9p {\n}"), `ir: program name "9p" is not a PTX identifier`},
		{"no kernels", "program p {\n}\n", "ir: program p has no kernels"},
		{"sms out of range", header("program p sms 70000 {\n}"), "ir: parse: line 1: sms 70000, want 0..65536 (0: the target's)"},
		{"negative sms", header("program p sms -1 {\n}"), "ir: parse: line 1: sms -1, want 0..65536 (0: the target's)"},
		{"kernel twice", "program p {\n}\n" + combine + combine, "ir: program p: kernel combine appears twice"},
		{"workspace twice", header("program p {\n  workspace ws bytes 4\n  workspace ws bytes 4\n}"), "ir: program p: workspace ws declared twice"},
		{"workspace name", header("program p {\n  workspace _ bytes 4\n}"), `ir: workspace buffer name "_" is not a PTX identifier`},
		{"workspace too large", header("program p {\n  workspace ws bytes 281474976710657\n}"), "ir: parse: line 2: workspace ws: bytes 281474976710657, want 0..281474976710656"},
		{"workspace nobody takes", header("program p {\n  workspace ws bytes 4\n  workspace spare bytes 4\n}"), "ir: program p: workspace spare is no kernel's parameter"},
		{"workspace per part without a split", "program p {\n  workspace ws perpart 4\n}\n" + combine, "ir: program p: workspace ws grows per (row, chunk) pair (perpart) but no kernel has a split parameter"},
		{"workspace bound to a scalar", header("program p {\n  workspace rows bytes 4\n}"), "ir: program p: kernel combine: parameter %rows names workspace rows but is a i32, not a pointer"},
		{"one argument of two types", header("program p {\n}") + "kernel other(%out: i64) grid(1, 1, 1) warps 1 {\n}\n",
			"ir: program p: parameter %out is i64 in kernel other but ptr<f32> in kernel combine (kernels share an argument by name)"},
		{"no workspace keyword", header("program p {\n  buffer ws\n}"), `ir: parse: line 2: want "workspace", have "buffer"`},
		{"junk between kernels", header("program p {\n}") + "junk", `want kernel, have "junk"`},
	} {
		_, err := ParseProgram(c.src)
		if c.name == "Parse of a program" {
			_, err = Parse(c.src)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
