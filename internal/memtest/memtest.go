// Package memtest measures the heap a piece of code holds, for the tests that hold
// host-memory estimates (check, emu) to what is really allocated.
package memtest

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// PeakHeapBytes runs f and returns the most heap it held above what was live before
// it: HeapAlloc sampled every 100 µs with the collector running at each 1% of growth,
// so that garbage does not count (the check's CLI sets a memory limit, under which
// the collector keeps garbage from piling up). A sample can miss a short peak, never
// add one, so the figure is at most the true peak of live data plus 1%.
func PeakHeapBytes(f func()) int64 {
	old := debug.SetGCPercent(1)
	defer debug.SetGCPercent(old)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	peak.Store(base)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			default:
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	f()
	close(done)
	<-stopped
	return int64(peak.Load() - base)
}
