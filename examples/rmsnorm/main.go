// Command rmsnorm runs the RMSNorm kernel that `go generate` wrote into package rmsnorm
// (from rmsnorm/rmsnorm.ir) on seeded rows at two batch sizes from one loaded kernel,
// compares each result with the float64 reference (rmsnorm.Reference) at the package's
// tolerance, and times it.
//
// Built with `-tags cuda` and cgo it runs on a GPU (sm_90 or sm_120); any other build
// compiles and stops at runtime.Open with runtime.ErrNoCUDA (exit 2).
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/ptxgen/ptxgen/runtime"

	"github.com/ptxgen/ptxgen/examples/rmsnorm/rmsnorm"
)

func main() {
	ordinal := flag.Int("device", 0, "CUDA device `ordinal`")
	seed := flag.Uint64("seed", 1, "seed of the random inputs")
	iters := flag.Int("iters", 100, "timed launches per batch size")
	flag.Parse()
	err := run(*ordinal, *seed, *iters)
	if errors.Is(err, runtime.ErrNoCUDA) {
		fmt.Fprintln(os.Stderr, "rmsnorm:", err)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rmsnorm:", err)
		os.Exit(1)
	}
}

func run(ordinal int, seed uint64, iters int) error {
	if iters < 1 || iters > 100000 {
		return fmt.Errorf("-iters %d, want 1..100000", iters)
	}
	dev, err := runtime.Open(ordinal)
	if err != nil {
		return err
	}
	defer dev.Close()
	k, err := rmsnorm.NewRmsnorm(dev)
	if err != nil {
		return err
	}
	defer k.Close()
	fmt.Printf("%s: rmsnorm for %s, up to %d rows of %d\n", dev, k.Target(), k.MaxRows(), rmsnorm.Width)
	for _, rows := range []int{5, k.MaxRows()} {
		if err := runBatch(dev, k, rows, seed, iters); err != nil {
			return fmt.Errorf("%d rows: %w", rows, err)
		}
	}
	return nil
}

// runBatch launches rows rows on seeded inputs, checks every output element against the
// float64 reference and times the launch with CUDA events.
func runBatch(dev *runtime.Device, k *rmsnorm.Rmsnorm, rows int, seed uint64, iters int) error {
	rng := rand.New(rand.NewPCG(seed, uint64(rows)))
	x := make([]float32, rows*rmsnorm.Width)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 3)
	}
	w := make([]float32, rmsnorm.Width)
	for i := range w {
		w[i] = float32(0.5 + rng.Float64())
	}
	xb, err := dev.FromF32(x)
	if err != nil {
		return err
	}
	defer xb.Free()
	wb, err := dev.FromF32(w)
	if err != nil {
		return err
	}
	defer wb.Free()
	yb, err := dev.Alloc(int64(4 * len(x)))
	if err != nil {
		return err
	}
	defer yb.Free()
	if err := k.Launch(rows, xb, wb, yb); err != nil {
		return err
	}
	got := make([]float32, len(x))
	if err := yb.CopyOutF32(got); err != nil {
		return err
	}
	want := rmsnorm.Reference(x, w, rows)
	worst, bad := 0.0, 0
	for i, wv := range want {
		d := math.Abs(float64(got[i]) - wv)
		worst = math.Max(worst, d/(rmsnorm.Abs+rmsnorm.Rel*math.Abs(wv)))
		if !(d <= rmsnorm.Abs+rmsnorm.Rel*math.Abs(wv)) {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("seed %d: %d of %d elements outside tolerance (worst %.2fx)", seed, bad, len(want), worst)
	}
	ms, err := dev.Time(func() error {
		for i := 0; i < iters; i++ {
			if err := k.Launch(rows, xb, wb, yb); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	us := float64(ms) * 1000 / float64(iters)
	gbs := float64(2*len(x)*4+len(w)*4) / (us * 1e-6) / 1e9
	fmt.Printf("rows %4d: PASS (worst error %.2fx the tolerance), %.2f us per launch (mean of %d, CUDA events), %.0f GB/s\n", rows, worst, us, iters, gbs)
	return nil
}
