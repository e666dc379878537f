// Package plan chooses, per call, which of a program's generated kernel variants run
// and how many chunks the candidate list is split into, from the rows of the call and
// the device's SM count. The rule is data (Rule) plus one small function (Choose):
// the kernel builders call it to decide what `dump -tokens T` shows and what the
// emulator runs, the generated Go launcher calls it at every Launch, and the launch
// manifest carries the Rule as JSON so that other hosts run the same ~30 lines
// (python/ptxgen_mla/plan.py does; its tests hold the two to the same choices).
//
// Nothing here needs cgo or a GPU.
package plan

import (
	"fmt"

	"github.com/ptxgen/ptxgen/target"
)

// Rule is what Choose needs: the families of decode kernels (one CTA shape each) and
// the numbers that pick between them.
type Rule struct {
	// Families are the CTA shapes: Families[0] always; after it, where generated,
	// families for the calls Rule.serves gives them (more heads per CTA, the heads in
	// the MMA's N dimension, or another residency of Families[0]'s heads), the last
	// one that serves a call taking it.
	Families []Family `json:"families"`
	// Combines are the kernels that merge partial results, one per split, fewest
	// chunks first; a Partial kernel is followed by the one of the call's split.
	Combines []Combine `json:"combines,omitempty"`
	// Split, when positive, is a split the user fixed (-split): every call uses
	// min(Split, tiles), counted in filled chunks. 0 plans it (SplitFor).
	Split int `json:"split"`
	// MaxSplit bounds the planned split.
	MaxSplit int `json:"max_split"`
	// SMs, when positive, is an SM count the user fixed (-sms); 0 uses the device's.
	SMs int `json:"sms"`
	// WideMinTiles: a wide family with 64-candidate tiles is chosen when each CTA walks
	// at least this many tiles and the CTAs fill at least half of the SMs.
	WideMinTiles int `json:"wide_min_tiles"`
	// SmallNum/SmallDen: a launch of at most SmallNum/SmallDen waves of CTAs (CTAs x
	// SmallDen <= SMs x SmallNum) is latency-bound and runs a family's Small kernels
	// where they exist.
	SmallNum int `json:"small_num"`
	SmallDen int `json:"small_den"`
	// SmallMaxTiles, when positive, limits the Small kernels to latency-bound launches
	// whose CTAs each walk at most this many tiles: past it the replicated scores cost
	// more than the all-reduce they save. 0: no limit.
	SmallMaxTiles int `json:"small_max_tiles"`
}

// Family is one CTA shape and its kernels. An entry is "" where that kernel was not
// generated: Choose never needs it, or, for a Small entry, runs the large one.
type Family struct {
	// HeadBlock through Precision are the family's variant, the design of its CTA
	// (kernels.MLAVariant, which the kernel builder builds): the launch manifest
	// carries them for hosts and people; Choose reads only Tile.
	HeadBlock int `json:"head_block"` // heads per CTA
	Warps     int `json:"warps"`      // warps per CTA
	// WarpGrid is how an output slice's m16n8 tiles are split over the warps: row
	// groups x column groups.
	WarpGrid [2]int `json:"warp_grid"`
	Tile     int    `json:"tile"`   // candidates per loop iteration
	Stages   int    `json:"stages"` // candidate tiles in flight
	// Precision names the arithmetic (operand types, accumulators).
	Precision string `json:"precision"`
	// ScoreWarps and ProducerWarps are the CTA's warp roles (0: none): the first
	// ScoreWarps compute the scores and the softmax, the last ProducerWarps
	// gather and dequantize.
	ScoreWarps    int `json:"score_warps,omitempty"`
	ProducerWarps int `json:"producer_warps,omitempty"`
	HeadBlocks    int `json:"head_blocks"` // CTAs per row in grid x
	Tiles         int `json:"tiles"`       // candidate tiles per row, over all segments
	PerSM         int `json:"ctas_per_sm"` // CTAs of this family one SM holds at once
	// MinRows, where positive, is the least rows of a call that this family serves,
	// instead of the wide rule (Rule.serves): the heads-in-N family on targets of one
	// 16-head CTA per SM, which gains from a measured number of rows on.
	MinRows int `json:"min_rows,omitempty"`
	// Direct writes the output itself (split 1); Partial writes one chunk's partial
	// result for Combine. The Small versions are the same for latency-bound launches
	// (replicated score tiles); "" where they would be the same code.
	Direct       string `json:"direct"`
	Partial      string `json:"partial"`
	DirectSmall  string `json:"direct_small"`
	PartialSmall string `json:"partial_small"`
}

// Combine is one generated merge kernel: it reads the Chunks partial results of each
// (row, head) of a call split Chunks ways. Its loop over the chunks is unrolled, so
// it is specialized per split (run 8: a kernel that reads the next power of two of
// chunks and masks the rest cost 0.5-6 us per call on the H200).
type Combine struct {
	Chunks int    `json:"chunks"`
	Name   string `json:"name"`
}

// Choice is what one call runs.
type Choice struct {
	Family int // index into Rule.Families
	Split  int // chunks per row, the decode kernel's split argument and grid z
	CTAs   int // CTAs of the decode launch
	// Kernels are the entries to launch in order: the decode kernel, then a Combine
	// when Split > 1. Empty for a call of 0 rows.
	Kernels []string
}

// SplitFor is the number of candidate chunks per row for family f. The CTA-tiles of
// the launch are spread over one wave of resident CTAs (slots: SMs x PerSM): each CTA
// takes ceil(CTA-tiles / slots) tiles, so chains are as short as the GPU allows
// without a second wave. Once rows x head blocks fill the SMs, a split must also keep
// the CTAs within that wave (at most slots / CTAs chunks), so it is 1 unless an SM
// holds more than twice the CTAs each one already gets: a family of 3 CTAs per SM
// splits 192 rows on 132 SMs 2 ways (run 69: H8 T192 -k-frags 61.2 -> 45.9 us),
// where a second wave of split CTAs would be slower than none (run 69: T256 split 2,
// 69.2 us against 56.4). Either way the split counts only chunks that get tiles
// (filled).
func (r *Rule) SplitFor(f Family, rows, sms int) int {
	if r.Split > 0 {
		return filled(f.Tiles, max(min(r.Split, f.Tiles), 1))
	}
	ctas, slots := rows*f.HeadBlocks, sms*max(f.PerSM, 1)
	if ctas >= sms && 2*ctas >= slots {
		return 1
	}
	per := max(ceilDiv(ctas*f.Tiles, slots), 1)
	split := ceilDiv(f.Tiles, per)
	if ctas >= sms {
		split = min(split, slots/ctas)
	}
	return filled(f.Tiles, max(min(split, r.MaxSplit), 1))
}

// filled is how many of split chunks get tiles when each takes ceil(tiles / split), as
// the decode kernels deal them: 34 tiles split 32 ways fill 17 chunks of 2, and the
// other 15 would be CTAs with nothing to do and partials the combine reads for nothing.
func filled(tiles, split int) int {
	if tiles < 1 {
		return 1
	}
	return ceilDiv(tiles, ceilDiv(tiles, split))
}

// Splits are the splits of more than one chunk that SplitFor may return for family f
// on some call and device, ascending: one Combine is generated for each.
func (r *Rule) Splits(f Family) []int {
	var out []int
	if r.Split > 0 {
		if s := r.SplitFor(f, 1, 1); s > 1 {
			out = append(out, s)
		}
		return out
	}
	// SplitFor deals per tiles to a chunk: at least ceil(tiles / the most chunks), a lone
	// row on a huge GPU, and at most ceil(tiles / PerSM), where the CTAs just miss
	// filling the SMs, or ceil(tiles / 2) for a family of more than 2 CTAs per SM,
	// which splits rows that fill the SMs once but not twice.
	most := r.SplitFor(f, 1, 1<<30)
	fewest := ceilDiv(f.Tiles, max(f.PerSM, 1))
	if f.PerSM > 2 {
		fewest = ceilDiv(f.Tiles, 2)
	}
	for per := fewest; per >= ceilDiv(f.Tiles, most); per-- {
		if s := ceilDiv(f.Tiles, per); s > 1 && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}

// serves reports whether family i (i >= 1) serves a call of rows on sms SMs: from
// its MinRows rows where it has them; otherwise by the rule for wide CTAs. A wide CTA
// dequantizes each KV tile once for more heads, but is alone on its SM and leaves
// fewer CTAs: with 64-candidate tiles it pays once each CTA walks at least
// WideMinTiles tiles and the CTAs fill at least half of the SMs; with 32-candidate
// tiles once the rows alone fill the SMs.
func (r *Rule) serves(i, rows, sms int) bool {
	w := r.Families[i]
	if w.MinRows > 0 {
		return rows >= w.MinRows
	}
	if w.Tile < 64 {
		return rows*w.HeadBlocks >= sms
	}
	split := r.SplitFor(w, rows, sms)
	return ceilDiv(w.Tiles, split) >= r.WideMinTiles && 2*rows*w.HeadBlocks*split >= sms
}

// Choose is the plan of a call of rows on a device of sms SMs (Rule.SMs overrides
// it): deterministic, and the same on every host.
func (r *Rule) Choose(rows, sms int) (Choice, error) {
	sms = r.smsFor(sms)
	if rows < 0 || sms < 1 || len(r.Families) == 0 {
		return Choice{}, fmt.Errorf("plan: %d rows on %d SMs with %d families", rows, sms, len(r.Families))
	}
	if rows == 0 {
		return Choice{Split: 1}, nil // launches nothing
	}
	// The last family past the first that serves the call; the first otherwise.
	fi := len(r.Families) - 1
	for fi > 0 && !r.serves(fi, rows, sms) {
		fi--
	}
	f := r.Families[fi]
	c := Choice{Family: fi, Split: r.SplitFor(f, rows, sms)}
	c.CTAs = f.HeadBlocks * rows * c.Split
	small := target.LatencyBoundOn(c.CTAs, sms, r.SmallNum, r.SmallDen) &&
		(r.SmallMaxTiles <= 0 || ceilDiv(f.Tiles, c.Split) <= r.SmallMaxTiles)
	k := pick(f.Direct, f.DirectSmall, small)
	if c.Split > 1 {
		k = pick(f.Partial, f.PartialSmall, small)
	}
	if k == "" {
		return Choice{}, fmt.Errorf("plan: %d rows on %d SMs need a family-%d kernel for split %d that was not generated", rows, sms, fi, c.Split)
	}
	c.Kernels = []string{k}
	if c.Split > 1 {
		comb := r.combineFor(c.Split)
		if comb == "" {
			return Choice{}, fmt.Errorf("plan: %d rows on %d SMs split %d ways, and no combine kernel of %d chunks was generated", rows, sms, c.Split, c.Split)
		}
		c.Kernels = append(c.Kernels, comb)
	}
	return c, nil
}

// smsFor is the SM count calls are planned for on a device of sms SMs: the count
// the user fixed (Rule.SMs, -sms) where there is one, the device's otherwise. It is
// the one statement of that default; below the plan the count travels in
// target.Target.SMs.
func (r *Rule) smsFor(sms int) int {
	if r.SMs > 0 {
		return r.SMs
	}
	return sms
}

// combineFor is the combine of split chunks, "" if none was generated.
func (r *Rule) combineFor(split int) string {
	for _, c := range r.Combines {
		if c.Chunks == split {
			return c.Name
		}
	}
	return ""
}

// pick is the Small kernel for a small launch where there is one.
func pick(large, small string, isSmall bool) string {
	if isSmall && small != "" {
		return small
	}
	return large
}

// MaxParts is the most (row, chunk) pairs, rows x split, of any call of 1..capacity
// rows that runs a Partial kernel on sms SMs: the workspace holds one partial result
// per pair. 0 when no call splits.
func (r *Rule) MaxParts(capacity, sms int) int {
	sms = r.smsFor(sms)
	fewest := 0 // the fewest CTAs per row of any family
	for i, f := range r.Families {
		if i == 0 || f.HeadBlocks < fewest {
			fewest = f.HeadBlocks
		}
	}
	parts := 0
	for rows := 1; rows <= capacity; rows++ {
		c, err := r.Choose(rows, sms)
		if err == nil && c.Split > 1 {
			parts = max(parts, rows*c.Split)
		}
		if r.Split == 0 && rows*fewest >= sms {
			break // from here on every family's split is 1
		}
	}
	return parts
}

// Kernels lists every entry the rule may launch, each once, in family order.
func (r *Rule) Kernels() []string {
	var out []string
	seen := map[string]bool{"": true}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, f := range r.Families {
		add(f.Direct)
		add(f.DirectSmall)
		add(f.Partial)
		add(f.PartialSmall)
	}
	for _, c := range r.Combines {
		add(c.Name)
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Sequences are the launch sequences a call may run: per family, each generated
// decode kernel alone (Direct) or followed by each Combine (Partial).
func (r *Rule) Sequences() [][]string {
	var out [][]string
	for _, f := range r.Families {
		for _, n := range []string{f.Direct, f.DirectSmall} {
			if n != "" {
				out = append(out, []string{n})
			}
		}
		for _, n := range []string{f.Partial, f.PartialSmall} {
			if n != "" {
				for _, c := range r.Combines {
					out = append(out, []string{n, c.Name})
				}
			}
		}
	}
	return out
}
