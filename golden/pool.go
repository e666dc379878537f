package golden

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
)

// GenMLAPool returns seeded inputs for benchmarking: every candidate valid (len =
// K in every row, no -1), q, sinks and the referenced records drawn as GenMLA
// draws them. Where the candidates live depends on shared:
//
//   - shared = false (a serving pool): row t reads pages of its own, ceil(K/B)
//     per segment, distinct across rows and placed at seeded random positions
//     in the pool; each row's candidates are its pages' slots in a random order.
//     Pages no row references stay zero and are never written, so a pool much
//     larger than L2 costs no generation time.
//   - shared = true (a small pool): every page of every segment is filled and
//     every row draws its K distinct candidates from all of them, so the rows
//     share records and, on a GPU, mostly hit L2.
//
// Each segment needs Pages >= T*ceil(K/B) when not shared, >= ceil(K/B) when
// shared; the error names the segment and both numbers.
func GenMLAPool(c MLAConfig, seed uint64, shared bool) (*MLAInputs, error) {
	fail := func(format string, args ...any) (*MLAInputs, error) {
		return nil, fmt.Errorf("GenMLAPool seed %#x: %s", seed, fmt.Sprintf(format, args...))
	}
	if err := c.Validate(); err != nil {
		return fail("%v", err)
	}
	for s := range c.Segments {
		sc := c.Segment(s)
		need, why := (sc.K+sc.PageSize-1)/sc.PageSize, "ceil(K/B)"
		if !shared {
			need, why = need*c.T, "T x ceil(K/B)"
		}
		if sc.Pages < need {
			return fail("Layouts[%d].Pages = %d, want >= %d (%s)", s, sc.Pages, need, why)
		}
	}
	r := newRand(seed)
	in := &MLAInputs{Q: genQ(c, r)}
	for s := range c.Segments {
		sc := c.Segment(s)
		B := sc.PageSize
		cache := make([]byte, int64(sc.Pages)*int64(sc.PageStride))
		stride := sc.idxStride()
		si := SegmentInputs{Cache: cache, Idx: make([]int32, (c.T-1)*stride+sc.K)}
		if sc.HasLen {
			si.Len = make([]int32, c.T)
		}
		perRow := (sc.K + B - 1) / B
		var filled []int // pages to fill with records
		if shared {
			for p := range sc.Pages {
				filled = append(filled, p)
			}
		}
		// Distinct pages for the rows: the first T*perRow of a seeded permutation.
		var order []int
		if !shared {
			order = r.Perm(sc.Pages)[:c.T*perRow]
		}
		for t := 0; t < c.T; t++ {
			row := si.Idx[t*stride : t*stride+sc.K]
			if shared {
				for j, id := range r.Perm(sc.Slots())[:sc.K] {
					row[j] = int32(id)
				}
			} else {
				pages := order[t*perRow : (t+1)*perRow]
				slots := make([]int32, 0, perRow*B)
				for _, p := range pages {
					filled = append(filled, p)
					for off := range B {
						slots = append(slots, int32(p*B+off))
					}
				}
				r.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
				copy(row, slots)
			}
			if sc.HasLen {
				si.Len[t] = int32(sc.K)
			}
		}
		fillPages(c, sc, cache, filled, seed, s)
		in.Segments = append(in.Segments, si)
	}
	if c.Sink {
		in.Sink = make([]float32, c.H)
		for h := range in.Sink {
			in.Sink[h] = float32(-1 + 9*r.Float64())
		}
	}
	return in, nil
}

// fillPages writes random records into the given pages of one segment's cache,
// in parallel: page p of segment s draws from its own stream (seed, s, p), so the
// bytes do not depend on the number of workers.
func fillPages(c MLAConfig, sc SegmentConfig, cache []byte, pages []int, seed uint64, s int) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), max(len(pages), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				r := rand.New(rand.NewPCG(seed, uint64(s)<<40|uint64(p)))
				for off := range sc.PageSize {
					writeToken(c, cache[p*sc.PageStride:], sc.PageSize, off, r)
				}
			}
		}()
	}
	for _, p := range pages {
		work <- p
	}
	close(work)
	wg.Wait()
}
