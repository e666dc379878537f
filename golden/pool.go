package golden

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Pools of GenMLAPool: where a benchmark call's candidates live.
const (
	// PoolServing gives every row whole pages of its own (ceil(K/B) per segment),
	// distinct across rows and randomly placed; its candidates are those pages'
	// slots in a random order. No record is read twice in a call.
	PoolServing = "serving"
	// PoolSmall is one pool whose every page is filled and from which every row
	// draws its K distinct candidates, so rows share records (on a GPU: L2 hits).
	PoolSmall = "small"
	// PoolSparse gives every row a sequence of its own, Pages/T whole pages per
	// segment (distinct across rows, randomly placed), and draws its K candidates
	// as a random subset of that sequence's slots, as a top-k indexer selects them:
	// records at scattered slots, most pages holding a few candidates, none read twice.
	PoolSparse = "sparse"
)

// GenMLAPool returns seeded inputs for benchmarking: every candidate valid (len =
// K in every row, no -1), q, sinks and the referenced records drawn as GenMLA
// draws them; pool (PoolServing, PoolSmall or PoolSparse) says where the
// candidates live. Pages no row references stay zero and are never written, so a
// pool much larger than L2 costs no generation time.
//
// Each segment needs Pages >= T*ceil(K/B) (serving, sparse) or >= ceil(K/B)
// (small); the error names the segment and both numbers.
func GenMLAPool(c MLAConfig, seed uint64, pool string) (*MLAInputs, error) {
	fail := func(format string, args ...any) (*MLAInputs, error) {
		return nil, fmt.Errorf("GenMLAPool seed %#x: %s", seed, fmt.Sprintf(format, args...))
	}
	if pool != PoolServing && pool != PoolSmall && pool != PoolSparse {
		return fail("pool %q, want %s, %s or %s", pool, PoolServing, PoolSmall, PoolSparse)
	}
	if err := c.Validate(); err != nil {
		return fail("%v", err)
	}
	shared := pool == PoolSmall
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
		// Pages per row: the K candidates' pages (serving), or an equal share of
		// the pool (sparse: the row's sequence).
		perRow := (sc.K + B - 1) / B
		if pool == PoolSparse {
			perRow = sc.Pages / c.T
		}
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
		used := map[int]bool{}
		for t := 0; t < c.T; t++ {
			row := si.Idx[t*stride : t*stride+sc.K]
			switch pool {
			case PoolSmall:
				for j, id := range r.Perm(sc.Slots())[:sc.K] {
					row[j] = int32(id)
				}
			case PoolServing:
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
			case PoolSparse:
				// K distinct positions of the row's sequence (its pages in order).
				pages := order[t*perRow : (t+1)*perRow]
				for j, at := range sampleDistinct(r, perRow*B, sc.K) {
					p := pages[at/B]
					row[j] = int32(p*B + at%B)
					if !used[p] {
						used[p] = true
						filled = append(filled, p)
					}
				}
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

// sampleDistinct returns k distinct integers of [0, n) in a random order, without
// an n-element permutation when k is small against n (a sparse pool's row may span
// millions of slots).
func sampleDistinct(r *rand.Rand, n, k int) []int {
	if 4*k >= n {
		return r.Perm(n)[:k]
	}
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for len(out) < k {
		if x := r.IntN(n); !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
