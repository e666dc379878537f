package golden

import (
	"bytes"
	"testing"

	"github.com/ptxgen/ptxgen/mla"
)

func poolConfig(T, pages0, pages1 int) MLAConfig {
	const B = 64
	return NewMLAConfig(mla.Shape{T: T, H: 4, Nope: mla.FP8DSNope, Rope: mla.FP8DSRope, Cache: mla.CacheFP8DS, Sink: true},
		segment(128, B, B*mla.FP8DSTokenBytes, pages0, 0, true), segment(100, B, B*mla.FP8DSTokenBytes, pages1, 0, true))
}

// TestGenMLAPoolServing: every row's candidates are all valid, distinct, and on
// pages no other row touches; only referenced pages hold data; the same seed
// gives the same bytes and another seed other placements.
func TestGenMLAPoolServing(t *testing.T) {
	const seed = 7
	c := poolConfig(5, 40, 30)
	in, err := GenMLAPool(c, seed, PoolServing)
	if err != nil {
		t.Fatal(err)
	}
	for s := range c.Segments {
		sc := c.Segment(s)
		si := in.Segments[s]
		owner := map[int]int{} // page -> row
		for r := 0; r < c.T; r++ {
			if si.Len[r] != int32(sc.K) {
				t.Errorf("seed %d seg %d row %d: len %d, want K = %d", seed, s, r, si.Len[r], sc.K)
			}
			rowPages(t, seed, s, r, sc, si.Idx[r*sc.K:(r+1)*sc.K], owner)
		}
		if want := c.T * ((sc.K + sc.PageSize - 1) / sc.PageSize); len(owner) != want {
			t.Errorf("seed %d seg %d: %d pages referenced, want %d", seed, s, len(owner), want)
		}
		checkOnlyReferencedPages(t, seed, s, sc, si.Cache, owner)
	}
	checkPoolSeeds(t, c, in, seed, PoolServing, "place the rows alike")
}

func bytesOfI32(xs []int32) []byte {
	var b bytes.Buffer
	for _, x := range xs {
		b.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
	}
	return b.Bytes()
}

// TestGenMLAPoolShared: the small pool fills every page and lets rows share.
func TestGenMLAPoolShared(t *testing.T) {
	c := poolConfig(6, 6, 6)
	in, err := GenMLAPool(c, 3, PoolSmall)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int32]int{}
	for _, id := range in.Segments[0].Idx {
		used[id]++
	}
	shared := 0
	for _, n := range used {
		if n > 1 {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("seed 3: no slot shared by two rows of a %d-slot pool", c.Segment(0).Slots())
	}
	if _, _, err := MLADecode(c, in); err != nil {
		t.Errorf("seed 3: %v", err)
	}
}

func TestGenMLAPoolTooSmall(t *testing.T) {
	c := poolConfig(5, 9, 30) // 5 rows x 2 pages > 9
	if _, err := GenMLAPool(c, 1, PoolServing); err == nil || !bytes.Contains([]byte(err.Error()), []byte("Layouts[0].Pages = 9, want >= 10")) {
		t.Errorf("err = %v", err)
	}
}

// TestGenMLAPoolSparse: every row's candidates are valid, distinct slots inside the
// pool, all on the row's own sequence (pages no other row touches), scattered over
// more pages than whole-page gathers would need; referenced pages and only they
// hold data; the same seed gives the same bytes and another seed other slots.
func TestGenMLAPoolSparse(t *testing.T) {
	const seed = 11
	c := poolConfig(4, 40, 36) // 10 and 9 pages per row: sequences of 640 and 576 slots
	in, err := GenMLAPool(c, seed, PoolSparse)
	if err != nil {
		t.Fatal(err)
	}
	for s := range c.Segments {
		sc := c.Segment(s)
		si := in.Segments[s]
		owner := map[int]int{} // page -> row
		for r := 0; r < c.T; r++ {
			if si.Len[r] != int32(sc.K) {
				t.Errorf("seed %d seg %d row %d: len %d, want K = %d", seed, s, r, si.Len[r], sc.K)
			}
			pages := rowPages(t, seed, s, r, sc, si.Idx[r*sc.K:(r+1)*sc.K], owner)
			whole := (sc.K + sc.PageSize - 1) / sc.PageSize
			if len(pages) <= whole || len(pages) > sc.Pages/c.T {
				t.Errorf("seed %d seg %d row %d: candidates on %d pages, want more than the %d whole pages and at most the row's %d", seed, s, r, len(pages), whole, sc.Pages/c.T)
			}
		}
		checkOnlyReferencedPages(t, seed, s, sc, si.Cache, owner)
	}
	checkPoolSeeds(t, c, in, seed, PoolSparse, "pick the same slots")
	if _, err := GenMLAPool(c, seed, "dense"); err == nil || !bytes.Contains([]byte(err.Error()), []byte(`pool "dense"`)) {
		t.Errorf("pool dense: err = %v", err)
	}
}

// TestSampleDistinct: both branches give k distinct values in range.
func TestSampleDistinct(t *testing.T) {
	r := newRand(5)
	for _, nk := range [][2]int{{10, 10}, {100, 30}, {1 << 20, 500}} {
		got := sampleDistinct(r, nk[0], nk[1])
		seen := map[int]bool{}
		for _, x := range got {
			if x < 0 || x >= nk[0] || seen[x] {
				t.Fatalf("n %d k %d: %d out of range or repeated", nk[0], nk[1], x)
			}
			seen[x] = true
		}
		if len(got) != nk[1] {
			t.Errorf("n %d k %d: %d values", nk[0], nk[1], len(got))
		}
	}
}

// rowPages checks row r's candidate ids: valid slots of the pool, distinct, on
// pages no other row has (owner maps each page seen so far to its row, and gains
// this row's); it returns the row's pages.
func rowPages(t *testing.T, seed uint64, s, r int, sc SegmentConfig, ids []int32, owner map[int]int) map[int]bool {
	t.Helper()
	seen := map[int32]bool{}
	pages := map[int]bool{}
	for _, id := range ids {
		if id < 0 || int(id) >= sc.Slots() || seen[id] {
			t.Fatalf("seed %d seg %d row %d: index %d invalid, outside the pool's %d slots, or repeated", seed, s, r, id, sc.Slots())
		}
		seen[id] = true
		p := int(id) / sc.PageSize
		if o, ok := owner[p]; ok && o != r {
			t.Fatalf("seed %d seg %d: page %d used by rows %d and %d", seed, s, p, o, r)
		}
		owner[p], pages[p] = r, true
	}
	return pages
}

// checkOnlyReferencedPages: exactly the pages some row's candidates reference hold data.
func checkOnlyReferencedPages(t *testing.T, seed uint64, s int, sc SegmentConfig, cache []byte, owner map[int]int) {
	t.Helper()
	zero := make([]byte, sc.PageStride)
	for p := 0; p < sc.Pages; p++ {
		pg := cache[p*sc.PageStride : (p+1)*sc.PageStride]
		if _, used := owner[p]; used == bytes.Equal(pg, zero) {
			t.Errorf("seed %d seg %d page %d: referenced %v but zero %v", seed, s, p, used, !used)
		}
	}
}

// checkPoolSeeds: the reference takes the pool's inputs, the same seed gives the same
// pool and the next seed another (differ says how they would be alike).
func checkPoolSeeds(t *testing.T, c MLAConfig, in *MLAInputs, seed uint64, kind, differ string) {
	t.Helper()
	if _, _, err := MLADecode(c, in); err != nil {
		t.Errorf("seed %d: reference rejects the inputs: %v", seed, err)
	}
	again, _ := GenMLAPool(c, seed, kind)
	other, _ := GenMLAPool(c, seed+1, kind)
	if !bytes.Equal(bytesOfI32(again.Segments[1].Idx), bytesOfI32(in.Segments[1].Idx)) || !bytes.Equal(again.Segments[1].Cache, in.Segments[1].Cache) {
		t.Errorf("seed %d: not deterministic", seed)
	}
	if bytes.Equal(bytesOfI32(other.Segments[1].Idx), bytesOfI32(in.Segments[1].Idx)) {
		t.Errorf("seeds %d and %d %s", seed, seed+1, differ)
	}
}
