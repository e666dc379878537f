package check

import (
	"encoding/binary"
	"fmt"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
	arch "github.com/ptxgen/ptxgen/target"
)

// MLAGather returns the gather-ceiling case of a decode's inputs (kernels.Gather):
// the same buffers the decode case reads (caches, idx, len, by the decode's
// parameter names), and out compared exactly with GatherReference. sms is the SM
// count its split is picked for (0: 132); split overrides the chunks per row (0:
// kernels.GatherConfig's choice).
func MLAGather(g golden.MLAConfig, in *golden.MLAInputs, target arch.Target, sms, split int) (*Case, error) {
	gc := kernels.GatherConfig{Shape: g.Shape, SMs: sms, Split: split}
	k, err := kernels.Gather(gc)
	if err != nil {
		return nil, err
	}
	comp, err := compileKernel(k, target)
	if err != nil {
		return nil, err
	}
	want := GatherReference(g, in, gc.Chunks())
	c := &Case{
		Name:     fmt.Sprintf("mla_gather %s chunks=%d target=%s", describeMLA(kernels.MLAConfig{Shape: g.Shape}), gc.Chunks(), target),
		Compiled: comp,
		Buffers:  map[string][]byte{"out": poison(int64(len(want)) * 4)},
		Scalars:  map[string]any{"rows": int32(g.T)},
	}
	bindSegments(c, g, in)
	wantF := make([]float64, len(want))
	for i, w := range want {
		wantF[i] = float64(w)
	}
	c.Compare = func(final map[string][]byte) []golden.Report {
		b := final["out"]
		got := make([]float64, len(b)/4)
		for i := range got {
			got[i] = float64(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return []golden.Report{golden.Compare("out", got, wantF, []int{g.T, gc.Chunks(), gc.TileCandidates()}, golden.Tolerance{})}
	}
	return c, nil
}

// GatherReference is what mla_gather writes for chunks CTAs per row: for row t,
// chunk c and lane n, the wrapping sum of the 32-bit little-endian words of the
// records (fp8ds: and their 8 scale bytes) of the candidates at position j*32 + n
// of every tile j of the chunk, counted over the segments' concatenated tile list;
// candidates the decode skips (past the row's length, index outside the pool)
// count 0.
func GatherReference(g golden.MLAConfig, in *golden.MLAInputs, chunks int) []uint32 {
	gc := kernels.GatherConfig{Shape: g.Shape}
	N := gc.TileCandidates()
	total := gc.Tiles()
	per := (total + chunks - 1) / chunks
	out := make([]uint32, g.T*chunks*N)
	words := func(b []byte) uint32 {
		var s uint32
		for i := 0; i+4 <= len(b); i += 4 {
			s += binary.LittleEndian.Uint32(b[i:])
		}
		return s
	}
	for t := 0; t < g.T; t++ {
		first := 0
		for s := range g.Segments {
			sc, si := g.Segment(s), in.Segments[s]
			stride := sc.IdxStride
			if stride == 0 {
				stride = sc.K
			}
			limit := sc.K
			if sc.HasLen {
				limit = min(max(int(si.Len[t]), 0), sc.K)
			}
			nt := (sc.K + N - 1) / N
			for j := 0; j < nt; j++ {
				c := (first + j) / per
				for n := 0; n < N; n++ {
					pos := j*N + n
					if pos >= limit {
						continue
					}
					id := int(si.Idx[t*stride+pos])
					if id < 0 || id >= sc.Slots() {
						continue
					}
					page, slot := id/sc.PageSize, id%sc.PageSize
					base := page * sc.PageStride
					var sum uint32
					if g.Cache == mla.CacheBF16 {
						rec := base + slot*g.D()*2
						sum = words(si.Cache[rec : rec+g.D()*2])
					} else {
						rec := base + slot*mla.FP8DSRecordBytes
						sum = words(si.Cache[rec : rec+mla.FP8DSRecordBytes])
						sw := base + sc.PageSize*mla.FP8DSRecordBytes + slot*mla.FP8DSScaleBytes
						sum += words(si.Cache[sw : sw+mla.FP8DSScaleBytes])
					}
					out[(t*chunks+c)*N+n] += sum
				}
			}
			first += nt
		}
	}
	return out
}
