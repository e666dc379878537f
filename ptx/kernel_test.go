package ptx

import "testing"

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
