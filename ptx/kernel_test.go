package ptx

import (
	"math"
	"testing"
)

// The split is the parameter bound to a grid dimension after the rows, whatever its
// name; a parameter called split that binds nothing is an ordinary argument.
func TestSplitIsMarkedByTheGrid(t *testing.T) {
	params := []KParam{{Name: "rows", Kind: "i32"}, {Name: "split", Kind: "i32"}, {Name: "chunks", Kind: "i32"}}
	for _, c := range []struct {
		grid      [3]string
		split     int
		maxSplit  int
		launchFor [3]int
	}{
		{[3]string{"", "rows", "chunks"}, 2, 9, [3]int{4, 3, 5}},
		{[3]string{"", "rows", "split"}, 1, 9, [3]int{4, 3, 5}},
		{[3]string{"", "rows", ""}, -1, 1<<31 - 1, [3]int{4, 3, 9}},
		{[3]string{"", "", ""}, -1, 1<<31 - 1, [3]int{4, 8, 9}},
	} {
		k := &Kernel{Name: "k", Grid: [3]int{4, 8, 9}, GridParam: c.grid, Params: params}
		if got := k.SplitParamIndex(); got != c.split {
			t.Errorf("grid %q: SplitParamIndex %d, want %d", c.grid, got, c.split)
		}
		if got := k.MaxSplit(); got != c.maxSplit {
			t.Errorf("grid %q: MaxSplit %d, want %d", c.grid, got, c.maxSplit)
		}
		if got := k.GridFor(3, 5); got != c.launchFor {
			t.Errorf("grid %q: GridFor(3, 5) = %v, want %v", c.grid, got, c.launchFor)
		}
	}
}

// TestMinBytesSaturates: a size whose terms overflow an int64 saturates at
// math.MaxInt64 instead of wrapping (issue 29: 2^62 bytes per row at 4 rows wrapped
// to 0, and a 16-byte buffer passed), so no buffer meets it.
func TestMinBytesSaturates(t *testing.T) {
	for _, c := range []struct {
		p           KParam
		rows, split int
		want        int64
	}{
		{KParam{Bytes: 64, PerRow: 512}, 3, 1, 64 + 3*512},
		{KParam{Bytes: 16, PerRow: 1024, PerPart: 8}, 4, 3, 16 + 4*1024 + 4*3*8},
		{KParam{PerRow: 1 << 62}, 4, 1, math.MaxInt64},
		{KParam{PerRow: 1 << 62}, 2, 1, math.MaxInt64},
		{KParam{Bytes: math.MaxInt64, PerRow: 1}, 1, 1, math.MaxInt64},
		{KParam{PerPart: 1 << 40}, 1 << 16, 1 << 16, math.MaxInt64},
		{KParam{Bytes: 1 << 62, PerRow: 1 << 61, PerPart: 1 << 61}, 1, 1, math.MaxInt64},
	} {
		if got := c.p.MinBytes(c.rows, c.split); got != c.want {
			t.Errorf("%+v.MinBytes(%d, %d) = %d, want %d", c.p, c.rows, c.split, got, c.want)
		}
	}
}
