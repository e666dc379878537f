package ir

import (
	"strings"
	"testing"
)

const stagesLoop = `kernel k(%x: ptr<f32> div 16 bytes 4096) grid(1, 1, 1) warps 1 {
  %lo = const 0 : i32
  %hi = const 8 : i32
  for %i = %lo to %hi step 1 stages STAGES {
  }
}
`

// A loop's pipeline depth prints as "stages N" (only N > 1: 1 is no pipeline, and
// prints as loops always did) and reads back to the same op.
func TestStagesRoundTrip(t *testing.T) {
	for _, n := range []string{"2", "3", "4"} {
		src := strings.Replace(stagesLoop, "STAGES", n, 1)
		k, err := Parse(src)
		if err != nil {
			t.Fatalf("stages %s: %v", n, err)
		}
		if got := Print(k); got != src {
			t.Errorf("stages %s: printed\n%s\nwant\n%s", n, got, src)
		}
	}
	k, err := Parse(strings.Replace(stagesLoop, "STAGES", "1", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Print(k), strings.Replace(stagesLoop, " stages STAGES", "", 1); got != want {
		t.Errorf("stages 1 printed\n%s\nwant\n%s", got, want)
	}
}

func TestStagesRefused(t *testing.T) {
	for _, n := range []string{"0", "5", "-1"} {
		_, err := Parse(strings.Replace(stagesLoop, "STAGES", n, 1))
		if err == nil || !strings.Contains(err.Error(), "stages "+n+": want 1..4") {
			t.Errorf("stages %s: got %v, want an error naming stages %s and 1..4", n, err, n)
		}
	}
	b := NewBuilder("k")
	b.SetGrid(1, 1, 1)
	b.SetWarps(1)
	b.ForStages(b.I32(0), b.I32(4), 1, 5, nil, func(*Value, []*Value) []*Value { return nil })
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "stages 5: want 1..4") {
		t.Errorf("builder stages 5: got %v", err)
	}
	b = NewBuilder("k")
	b.SetGrid(1, 1, 1)
	b.SetWarps(1)
	b.ForStages(b.I32(0), b.I32(4), 1, 3, nil, func(*Value, []*Value) []*Value { return nil })
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(Print(k), "step 1 stages 3 {") {
		t.Errorf("builder stages 3 printed\n%s", Print(k))
	}
}

// "ahead N" follows "stages N" and reads back to the same op; "ahead 0" is the stated
// none (NoAhead), distinct from the clause left out.
func TestAheadRoundTrip(t *testing.T) {
	for _, c := range []struct {
		clause string
		want   int
	}{{" stages 2 ahead 1", 1}, {" stages 3 ahead 3", 3}, {" stages 2 ahead 0", NoAhead}, {" stages 2", 0}, {" ahead 1", 1}} {
		src := strings.Replace(stagesLoop, " stages STAGES", c.clause, 1)
		k, err := Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", c.clause, err)
		}
		if got := Print(k); got != src {
			t.Errorf("%q: printed\n%s\nwant\n%s", c.clause, got, src)
		}
		if got := k.Body.Ops[2].Ahead; got != c.want {
			t.Errorf("%q: Ahead %d, want %d", c.clause, got, c.want)
		}
	}
}

func TestAheadRefused(t *testing.T) {
	for _, c := range []struct{ clause, want string }{
		{" stages 2 ahead 4", "ahead 4: want 0..3"},
		{" stages 2 ahead -1", "ahead -1: want 0..3"},
		{" ahead 9", "ahead 9: want 0..3"},
	} {
		_, err := Parse(strings.Replace(stagesLoop, " stages STAGES", c.clause, 1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.clause, err, c.want)
		}
	}
	b := NewBuilder("k")
	b.SetGrid(1, 1, 1)
	b.SetWarps(1)
	b.ForAhead(b.I32(0), b.I32(4), 1, 1, 4, nil, func(*Value, []*Value) []*Value { return nil })
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "ahead 4: want 0..3") {
		t.Errorf("builder ahead 4: got %v", err)
	}
}
