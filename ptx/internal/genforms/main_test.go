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
