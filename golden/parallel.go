package golden

import (
	"runtime"
	"sync"
)

// MLADecodeParallel is MLADecode with the query rows spread over the CPUs: rows
// are independent, so each worker runs the reference on one row at a time (T = 1
// views of the same buffers) and the results are bit-identical to MLADecode's.
func MLADecodeParallel(c MLAConfig, in *MLAInputs) (out, lse []float64, err error) {
	workers := min(runtime.NumCPU(), c.T)
	if workers <= 1 {
		return MLADecode(c, in)
	}
	if err := c.CheckInputs(in); err != nil {
		return nil, nil, err
	}
	D := c.D()
	out = make([]float64, c.T*c.H*D)
	lse = make([]float64, c.T*c.H)
	qt, qh := c.QStrides()
	rows := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range rows {
				rc := c
				rc.T = 1
				rc.QStrideT, rc.QStrideH = 0, qh
				if qh == D {
					rc.QStrideH = 0
				}
				rc.Layouts = append([]SegmentLayout(nil), c.Layouts...)
				rin := &MLAInputs{Q: in.Q[t*qt : t*qt+(c.H-1)*qh+D], Sink: in.Sink}
				for s := range c.Segments {
					sc := c.Segment(s)
					stride := sc.idxStride()
					rc.Layouts[s].IdxStride = 0
					si := SegmentInputs{Cache: in.Segments[s].Cache, Idx: in.Segments[s].Idx[t*stride : t*stride+sc.K]}
					if sc.HasLen {
						si.Len = in.Segments[s].Len[t : t+1]
					}
					rin.Segments = append(rin.Segments, si)
				}
				o, l, e := MLADecode(rc, rin)
				mu.Lock()
				if e != nil && err == nil {
					err = e
				}
				mu.Unlock()
				if e == nil {
					copy(out[t*c.H*D:], o)
					copy(lse[t*c.H:], l)
				}
			}
		}()
	}
	for t := 0; t < c.T; t++ {
		rows <- t
	}
	close(rows)
	wg.Wait()
	return out, lse, err
}
