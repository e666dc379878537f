package kernels

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/mla"
)

// GatherConfig configures mla_gather, the gather ceiling of an mla_decode shape: a
// kernel that reads exactly the records the decode reads (the same index arrays,
// lengths, pools and page layout: fp8ds 576-byte records plus their 8 scale bytes,
// or bf16 records) and does nothing else with them but fold their 32-bit words
// into one wrapping sum per candidate lane, which it writes out so that no load is
// dead. Its time is the least a decode of the shape can take on this GPU with
// ptxgen's gathers; the bench reports the decode's time as a multiple of it.
type GatherConfig struct {
	mla.Shape
	// Split is the number of candidate chunks per row, one CTA each; 0 picks enough
	// CTAs to fill SMs (at least 4 per SM) without chunks shorter than one tile.
	Split int
	// SMs is the SM count the split is picked for; 0 means 132 (an H200).
	SMs int
}

// mla_gather tiling: 32 candidates per tile, 4 warps, 3 tiles in flight (the
// pipelined loop issues tile j+2's gathers before summing tile j), 16-byte
// cp.async chunks of a record on consecutive lanes (the lowering's Load2 layout).
// A stage of fp8ds records is 20 KB, so a CTA holds 60 KB: 3 CTAs per SM on an
// H200 and within sm_120's 99 KB, the geometry of the fastest gather measured
// (docs/perf-notes.md, run 15: 32-candidate tiles, 3 stages, ids a tile ahead).
const (
	gatherTile   = 32
	gatherWarps  = 4
	gatherStages = 3
	gatherWords  = 16 // 32-bit words per Load2 slice: 64 bytes of a record
)

// Validate reports the first bad field.
func (c GatherConfig) Validate() error {
	if err := (MLAConfig{Shape: c.Shape}).Validate(); err != nil {
		return err
	}
	if c.D()%2 != 0 {
		return &ConfigError{Flag: "nope", Value: fmt.Sprint(c.Nope), Want: "nope + rope even (records are read as 32-bit words)"}
	}
	if c.Split < 0 || c.Split > mlaMaxSplit {
		return &ConfigError{Flag: "split", Value: fmt.Sprint(c.Split), Want: fmt.Sprintf("0..%d", mlaMaxSplit)}
	}
	if c.SMs < 0 || c.SMs > 1<<16 {
		return &ConfigError{Flag: "sms", Value: fmt.Sprint(c.SMs), Want: "0..65536"}
	}
	return nil
}

// Tiles is the row's candidate tiles, the segments' concatenated.
func (c GatherConfig) Tiles() int {
	n := 0
	for _, s := range c.Segments {
		n += ceilDiv(s.K, gatherTile)
	}
	return n
}

// Chunks is the number of CTAs per row: Split, or the least that gives every SM
// 4 CTAs, at most one per tile.
func (c GatherConfig) Chunks() int {
	if c.Split > 0 {
		return min(c.Split, c.Tiles())
	}
	sms := c.SMs
	if sms == 0 {
		sms = 132
	}
	return max(1, min(c.Tiles(), ceilDiv(4*sms, c.T), mlaMaxSplit))
}

// TileCandidates is the candidates per tile: CTA (chunk, row) writes that many sums.
func (GatherConfig) TileCandidates() int { return gatherTile }

// GatherWords is the 32-bit words of one candidate's record as the gather reads
// them: the fp8ds record (576 bytes) and its scale words (8 bytes), or the bf16
// record.
func GatherWords(s mla.Shape) int {
	if s.Cache == mla.CacheBF16 {
		return s.D() / 2
	}
	return (mla.FP8DSRecordBytes + mla.FP8DSScaleBytes) / 4
}

// Gather builds mla_gather. CTA (chunk, row) walks the tiles
// [chunk*per, min((chunk+1)*per, tiles)) of the row's concatenated tile list with
// per = ceil(tiles / chunks), and writes out[(row*chunks + chunk)*32 + n]: the
// wrapping u32 sum, over its tiles, of every word of candidate n's record (0 where
// the decode would skip the candidate: past the row's length, or an index outside
// [0, slots)). Parameters are the decode's, named alike (cache<s>, page_stride<s>,
// slots<s>, idx<s>, idx_stride<s>, len<s>), plus rows and out.
func Gather(c GatherConfig) (*ir.Kernel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	chunks, total := c.Chunks(), c.Tiles()
	N := gatherTile
	b := ir.NewBuilder("mla_gather")
	b.SetGrid(chunks, c.T, 1)
	b.SetWarps(gatherWarps)
	b.SetLatency(ir.LatencyLarge)
	b.BindGrid(1, b.Param("rows", ir.ScalarOf(ir.I32), 1, 0))
	segs := segmentParams(b, c.Shape)
	out := b.ParamRows("out", ir.PtrTo(ir.I32), 16, int64(chunks)*int64(N)*4)

	row := b.Name(b.ProgramID(1), "t")
	row64 := b.Cast(row, ir.I64)
	per := ceilDiv(total, chunks)
	lo := b.Name(b.Mul(b.ProgramID(0), b.I32(int64(per))), "tile_lo")
	hi := b.Name(b.Min(b.Add(lo, b.I32(int64(per))), b.I32(int64(total))), "tile_hi")
	sum := b.ConstInt(0, ir.TileOf(ir.I32, N, gatherWords))
	recBytes := int64(mla.FP8DSRecordBytes)
	if c.Cache == mla.CacheBF16 {
		recBytes = int64(c.D()) * 2
	}
	list := newCandidateList(b, c.Shape, segs, row64, N)
	// The chunk's indices before the loop, when few (as the decode does): the
	// gathers' addresses then wait on no global load (docs/perf-notes.md, run 15).
	var allIds *ir.Value
	if list.preloads(per) {
		allIds = list.preload(b, lo, hi, per*N)
	}
	sum = b.ForStages(lo, hi, 1, gatherStages, []*ir.Value{sum}, func(j *ir.Value, st []*ir.Value) []*ir.Value {
		var ids *ir.Value
		if allIds != nil {
			ids = b.Slice(allIds, b.Mul(b.Sub(j, lo), b.I32(int64(N))), N)
		}
		t := list.tile(b, j, ids)
		words := b.Bitcast(t.cache, ir.I32)
		rec := b.Div(b.Add(t.pageBase, b.Mul(t.slot, b.I64(recBytes))), b.I64(4))
		acc := st[0]
		// Every load is a [32, 16] tile (fewer words by the column bound), added
		// elementwise: nothing but the loads and one add per word.
		fold := func(rows *ir.Value, col0, cols int) {
			var bound *ir.Value
			if cols < gatherWords {
				bound = b.I32(int64(cols))
			}
			acc = b.Add(acc, b.Load2(words, rows, b.I64(int64(col0)), gatherWords, t.valid, bound))
		}
		if c.Cache != mla.CacheBF16 {
			// The scale words first, as the decode issues them.
			scales := b.Div(b.Add(b.Add(t.pageBase, t.scaleBlock), b.Mul(t.slot, b.I64(mla.FP8DSScaleBytes))), b.I64(4))
			fold(scales, 0, mla.FP8DSScaleBytes/4)
		}
		n := int(recBytes / 4)
		for w := 0; w < n; w += gatherWords {
			fold(rec, w, min(gatherWords, n-w))
		}
		return []*ir.Value{acc}
	})[0]
	// The 16 word columns folded into one wrapping sum per candidate lane, exactly:
	// 16-bit halves sum exactly in f32 (16 x 65535 < 2^24), whatever the order.
	half := func(v *ir.Value) *ir.Value {
		return b.Cast(b.Reduce("sum", b.Cast(b.And(v, b.I32(0xFFFF)), ir.F32), 1), ir.I32)
	}
	lane := b.Add(half(sum), b.Shl(half(b.Shr(sum, b.I32(16))), b.I32(16)))
	part := b.Add(b.Mul(row64, b.I64(int64(chunks))), b.Cast(b.ProgramID(0), ir.I64))
	b.Store1(out, b.Add(b.Mul(part, b.I64(int64(N))), b.Cast(b.Iota(N), ir.I64)), nil, lane)
	return b.Finish()
}

// GatherBytes is what one mla_gather call reads from the caches at the least
// (every valid candidate's record and scale words, as the decode reads them).
func GatherBytes(s mla.Shape) int64 {
	k := 0
	for _, sg := range s.Segments {
		k += sg.K
	}
	return int64(s.T) * int64(k) * int64(GatherWords(s)) * 4
}
