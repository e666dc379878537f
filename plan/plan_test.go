package plan

import (
	"strings"
	"testing"
)

// A rule of one 16-head family over 8 tiles, one CTA per SM, with the combines of
// its splits.
func testRule() *Rule {
	return &Rule{
		Families: []Family{{HeadBlock: 16, Tile: 32, HeadBlocks: 1, Tiles: 8, PerSM: 1,
			Direct: "d", Partial: "p", DirectSmall: "ds", PartialSmall: "ps"}},
		Combines: []Combine{{Chunks: 2, Name: "c2"}, {Chunks: 3, Name: "c3"}, {Chunks: 4, Name: "c4"}, {Chunks: 8, Name: "c8"}},
		MaxSplit: 32, SmallNum: 5, SmallDen: 4,
	}
}

// Each split runs the combine of that many chunks.
func TestChooseCombine(t *testing.T) {
	r := testRule()
	for _, c := range []struct {
		rows, sms, split int
		kernels          string
	}{
		{rows: 1, sms: 2, split: 2, kernels: "ps c2"},    // 8 CTA-tiles over 2 SMs: 4 tiles a chunk
		{rows: 3, sms: 8, split: 3, kernels: "ps c3"},    // 24 over 8: 3 tiles a chunk, 3 chunks
		{rows: 1, sms: 1000, split: 8, kernels: "ps c8"}, // a lone row: one tile a chunk
		{rows: 7, sms: 8, split: 2, kernels: "p c2"},     // 14 CTAs: more than 5/4 waves
		{rows: 8, sms: 8, split: 1, kernels: "ds"},       // the rows fill the SMs
		{rows: 40, sms: 4, split: 1, kernels: "d"},       // and make 10 waves
	} {
		ch, err := r.Choose(c.rows, c.sms)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ch.Kernels, " "); ch.Split != c.split || got != c.kernels {
			t.Errorf("%d rows on %d SMs: split %d, kernels %q; want %d, %q", c.rows, c.sms, ch.Split, got, c.split, c.kernels)
		}
	}
}

// With SmallMaxTiles, a latency-bound launch runs the Small kernels only where each
// CTA walks at most that many tiles.
func TestChooseSmallOnlyForShortChunks(t *testing.T) {
	r := testRule()
	r.SmallMaxTiles = 2
	for _, c := range []struct {
		rows, sms int
		kernels   string
	}{
		{rows: 1, sms: 2, kernels: "p c2"},     // 4 tiles a chunk
		{rows: 3, sms: 8, kernels: "p c3"},     // 3 tiles a chunk
		{rows: 1, sms: 4, kernels: "ps c4"},    // 2 tiles a chunk
		{rows: 1, sms: 1000, kernels: "ps c8"}, // one tile a chunk
		{rows: 8, sms: 8, kernels: "d"},        // 8 tiles, one chunk
	} {
		ch, err := r.Choose(c.rows, c.sms)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ch.Kernels, " "); got != c.kernels {
			t.Errorf("%d rows on %d SMs: kernels %q (split %d); want %q", c.rows, c.sms, got, ch.Split, c.kernels)
		}
	}
}

// A split no combine reads is an error naming it, not a launch that drops chunks.
func TestChooseWithoutCombine(t *testing.T) {
	r := testRule()
	r.Combines = r.Combines[:3]
	_, err := r.Choose(1, 1000)
	if err == nil || !strings.Contains(err.Error(), "split 8 ways") {
		t.Fatalf("split 8 without its combine: err %v", err)
	}
}

func TestSequencesPairEachPartialWithEachCombine(t *testing.T) {
	var got []string
	for _, s := range testRule().Sequences() {
		got = append(got, strings.Join(s, "+"))
	}
	want := "d ds p+c2 p+c3 p+c4 p+c8 ps+c2 ps+c3 ps+c4 ps+c8"
	if strings.Join(got, " ") != want {
		t.Errorf("sequences %q, want %q", strings.Join(got, " "), want)
	}
	if k := strings.Join(testRule().Kernels(), " "); k != "d ds p ps c2 c3 c4 c8" {
		t.Errorf("kernels %q", k)
	}
}

// TestSplitsAreWhatSplitForReturns: Splits lists exactly the splits above 1 that
// calls reach (each needs a combine kernel, and one no call reaches is dead code),
// and every split counts only chunks that get tiles.
func TestSplitsAreWhatSplitForReturns(t *testing.T) {
	for tiles := 1; tiles <= 40; tiles++ {
		for perSM := 1; perSM <= 4; perSM++ {
			for _, maxSplit := range []int{5, 64} {
				r := &Rule{MaxSplit: maxSplit}
				f := Family{HeadBlocks: 1, Tiles: tiles, PerSM: perSM}
				reached := map[int]bool{}
				for sms := 1; sms <= 400; sms++ {
					// Rows that fill the SMs split too where an SM holds 2x their CTAs.
					for rows := 1; rows < 3*sms; rows++ {
						s := r.SplitFor(f, rows, sms)
						if per := ceilDiv(tiles, s); s > 1 && (s-1)*per >= tiles {
							t.Fatalf("tiles %d, %d rows on %d SMs: split %d leaves chunk %d empty", tiles, rows, sms, s, s-1)
						}
						if s > 1 {
							reached[s] = true
						}
					}
				}
				splits := r.Splits(f)
				for _, s := range splits {
					if !reached[s] {
						t.Errorf("tiles %d, %d per SM, max %d: Splits %v lists %d, which no call reaches", tiles, perSM, maxSplit, splits, s)
					}
					delete(reached, s)
				}
				if len(reached) > 0 {
					t.Errorf("tiles %d, %d per SM, max %d: Splits %v misses %v", tiles, perSM, maxSplit, splits, reached)
				}
			}
		}
	}
}

// Rows that fill the SMs split only where the split CTAs stay within one wave of
// resident CTAs: run 69's shapes (H8, 64 tiles, 132 SMs) for 3 and 2 CTAs per SM.
func TestSplitOfRowsThatFillTheSMsStaysInOneWave(t *testing.T) {
	r := &Rule{MaxSplit: 32}
	for _, c := range []struct{ rows, perSM, split int }{
		{rows: 192, perSM: 3, split: 2}, // 384 CTAs in 396 slots
		{rows: 256, perSM: 3, split: 1}, // 512 would be a second wave
		{rows: 192, perSM: 2, split: 1},
		{rows: 132, perSM: 4, split: 4},
		{rows: 132, perSM: 2, split: 1}, // exactly 2 per SM: unmeasured, left at 1
		{rows: 140, perSM: 4, split: 3},
	} {
		f := Family{HeadBlocks: 1, Tiles: 64, PerSM: c.perSM}
		if s := r.SplitFor(f, c.rows, 132); s != c.split {
			t.Errorf("%d rows, %d CTAs per SM: split %d, want %d", c.rows, c.perSM, s, c.split)
		}
	}
	for perSM := 1; perSM <= 4; perSM++ {
		f := Family{HeadBlocks: 1, Tiles: 64, PerSM: perSM}
		for rows := 132; rows < 600; rows++ {
			if s := r.SplitFor(f, rows, 132); s > 1 && rows*s > 132*perSM {
				t.Fatalf("%d rows, %d CTAs per SM: split %d makes %d CTAs, more than %d slots", rows, perSM, s, rows*s, 132*perSM)
			}
		}
	}
}

// With three families a call takes the last that serves it: here a 4-head-block
// family of 2 CTAs per SM from the rows that fill the SMs with 4 CTAs each, and a
// 1-head-block family from the rows that fill them alone.
func TestChooseTakesTheLastFamilyThatServes(t *testing.T) {
	r := testRule()
	r.Families[0].HeadBlocks = 4
	r.Families = append(r.Families,
		Family{HeadBlock: 16, Tile: 32, HeadBlocks: 4, Tiles: 8, PerSM: 2, Direct: "fill"},
		Family{HeadBlock: 64, Tile: 32, HeadBlocks: 1, Tiles: 8, PerSM: 1, Direct: "wide"})
	for _, c := range []struct {
		rows, family int
		kernels      string
	}{
		{rows: 1, family: 0, kernels: "ps c8"},
		{rows: 24, family: 0, kernels: "ds"},
		{rows: 25, family: 1, kernels: "fill"}, // 100 CTAs of 4 head blocks fill 100 SMs
		{rows: 99, family: 1, kernels: "fill"},
		{rows: 100, family: 2, kernels: "wide"}, // the rows alone fill them
		{rows: 400, family: 2, kernels: "wide"},
	} {
		ch, err := r.Choose(c.rows, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ch.Kernels, " "); ch.Family != c.family || got != c.kernels {
			t.Errorf("%d rows on 100 SMs: family %d, kernels %q; want %d, %q", c.rows, ch.Family, got, c.family, c.kernels)
		}
	}
}
