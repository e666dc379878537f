package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// TestGeneratedFileCurrent: ptx/instrs_gen.go is what the generator writes from
// today's ptx.Forms (run go generate ./ptx after changing Forms).
func TestGeneratedFileCurrent(t *testing.T) {
	want, err := generate(ptx.Forms)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../instrs_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("ptx/instrs_gen.go is not what ptx.Forms generates: run go generate ./ptx")
	}
}

func TestFuncName(t *testing.T) {
	for op, want := range map[string]string{
		"ld.global.nc.v4.b32":              "LdGlobalNcV4B32",
		"cp.async.commit_group":            "CpAsyncCommitGroup",
		"griddepcontrol.launch_dependents": "GriddepcontrolLaunchDependents",
		"ret":                              "Ret",
	} {
		if got := funcName(op); got != want {
			t.Errorf("funcName(%q) = %s, want %s", op, got, want)
		}
	}
}

// TestGenerateRefusesCollisions: two opcodes that make one name are an error naming
// both, not a file that does not compile.
func TestGenerateRefusesCollisions(t *testing.T) {
	_, err := generate([]ptx.Form{{Op: "a.b_c"}, {Op: "a.b.c"}})
	if err == nil || !strings.Contains(err.Error(), "a.b_c and a.b.c") {
		t.Errorf("error %v, want one naming a.b_c and a.b.c", err)
	}
}

// TestFamilies: the typed constructors group the opcodes that differ only in their
// type suffix (and setp's comparison), each family with the types Forms lists.
func TestFamilies(t *testing.T) {
	fams, err := families(ptx.Forms)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*family{}
	for _, f := range fams {
		byName[f.name] = f
	}
	for name, want := range map[string]string{
		"Mov":      "b16 b32 b64 u32 u64 f32",
		"Setp":     "s32 s64 u32 u64 f32",
		"StShared": "u8 b16 s32 b32 f32 s64 b64",
		"Shr":      "s32 s64 u32 u64",
	} {
		f := byName[name]
		if f == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if got := strings.Join(f.types, " "); got != want {
			t.Errorf("%s types %s, want %s", name, got, want)
		}
	}
	if f := byName["Setp"]; f == nil || !f.cmp || strings.Join(f.cmps, " ") != "eq ne lt le gt ge" {
		t.Errorf("Setp family %+v, want the comparisons eq ne lt le gt ge", f)
	}
	// One type only is no family: cvta.to.global.u64 keeps its own constructor.
	if f := byName["CvtaToGlobal"]; f != nil {
		t.Errorf("family %+v of one opcode", f)
	}
}

// TestFamiliesRefuseMixedOperands: opcodes of one family taking different operands
// are an error naming both, not a constructor that builds one of them wrong.
func TestFamiliesRefuseMixedOperands(t *testing.T) {
	_, err := generate([]ptx.Form{{Op: "x.{b32|b64}", Args: "=r r"}, {Op: "x.f32", Args: "=r r r"}})
	if err == nil || !strings.Contains(err.Error(), "x.b32 and x.f32") {
		t.Errorf("error %v, want one naming x.b32 and x.f32", err)
	}
	_, err = generate([]ptx.Form{{Op: "ab.{b32|b64}"}, {Op: "ab"}})
	if err == nil || !strings.Contains(err.Error(), "constructor Ab") {
		t.Errorf("error %v, want one naming the constructor Ab", err)
	}
}

// TestNoHandWrittenConstructors: a hand-written form (Form.HandWritten) gets no
// constructor and joins no family, so the emitter cannot build it.
func TestNoHandWrittenConstructors(t *testing.T) {
	src, err := generate([]ptx.Form{{Op: "x.{b32|b64}", Args: "=r r"}, {Op: "x.u32", Args: "=r r", HandWritten: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "func XB32(") || strings.Contains(string(src), "XU32") || strings.Contains(string(src), "x.u32") {
		t.Errorf("generated:\n%s\nwant XB32 and no constructor of the hand-written x.u32", src)
	}
	fams, err := families([]ptx.Form{{Op: "x.{b32|b64}", Args: "=r r"}, {Op: "x.u32", Args: "=r r", HandWritten: true}})
	if err != nil || len(fams) != 1 || strings.Join(fams[0].types, " ") != "b32 b64" {
		t.Errorf("families %+v, %v: want x with b32 b64 only", fams, err)
	}
}
