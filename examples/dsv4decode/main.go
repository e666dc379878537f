// Command dsv4decode runs the DeepSeek-V4 sparse MLA decode kernel that `go generate`
// wrote into package decode on seeded inputs at two batch sizes (the rows of each call)
// from one loaded kernel and one workspace, compares each result with ptxgen's float64
// reference at the spec's tolerances, and times it.
//
// Built with `-tags cuda` and cgo it runs on a GPU (sm_90 or sm_120); any other build
// compiles, because the generated launcher is plain Go over ptxgen's runtime stub, and
// stops at runtime.Open with runtime.ErrNoCUDA.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/runtime"

	"github.com/ptxgen/ptxgen/examples/dsv4decode/decode"
)

func main() {
	ordinal := flag.Int("device", 0, "CUDA device `ordinal`")
	seed := flag.Uint64("seed", 1, "seed of the random inputs")
	iters := flag.Int("iters", 100, "timed launches per batch size")
	flag.Parse()
	err := run(*ordinal, *seed, *iters)
	if errors.Is(err, runtime.ErrNoCUDA) {
		fmt.Fprintln(os.Stderr, "dsv4decode:", err)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsv4decode:", err)
		os.Exit(1)
	}
}

// shape is the generated configuration's shape (mla.Shape, the one the generator
// read) for a call of rows rows, from the constants in decode_gen.go.
func shape(rows int) mla.Shape {
	return mla.Shape{
		T: rows, H: decode.MLADecodeH, MaxT: decode.MLADecodeMaxT, Nope: decode.MLADecodeNope, Rope: decode.MLADecodeRope,
		Cache: decode.MLADecodeCache, Sink: decode.MLADecodeSink, Scale: decode.MLADecodeScale,
		Segments: []mla.Segment{
			{K: decode.MLADecodeSegments0K, PageSize: decode.MLADecodeSegments0PageSize, HasLen: decode.MLADecodeSegments0HasLen},
			{K: decode.MLADecodeSegments1K, PageSize: decode.MLADecodeSegments1PageSize, HasLen: decode.MLADecodeSegments1HasLen},
		},
	}
}

// batches are the rows of the calls run, from one loaded kernel: a small batch and the
// capacity (decode.MLADecodeMaxT).
var batches = []int{3, decode.MLADecodeMaxT}

func run(ordinal int, seed uint64, iters int) error {
	dev, err := runtime.Open(ordinal)
	if err != nil {
		return err
	}
	defer dev.Close()
	// One load and one workspace (allocated for the capacity) serve every batch size.
	k, err := decode.NewMLADecode(dev)
	if err != nil {
		return err
	}
	defer k.Close()
	fmt.Printf("%s\nloaded the %s PTX for up to %d rows:", dev, k.Target(), k.MaxRows())
	for _, kk := range k.Kernels() {
		fmt.Printf(" %s (grid %v at capacity, %d threads, %d B shared, %d registers)", kk.Facts.Name, kk.Facts.Grid, kk.Facts.Block, kk.Facts.SharedBytes, kk.Registers)
	}
	fmt.Println()
	for i, rows := range batches {
		if err := runBatch(dev, k, rows, seed+uint64(i), iters); err != nil {
			return fmt.Errorf("%d rows: %w", rows, err)
		}
	}
	return nil
}

// runBatch runs one call of rows rows on fresh seeded inputs, checks it and times it.
func runBatch(dev *runtime.Device, k *decode.MLADecode, rows int, seed uint64, iters int) error {
	// The reference's view of the call: dense q and idx, pools big enough for
	// distinct candidates and poison.
	cfg := golden.PackedMLAConfig(shape(rows), golden.MLAPoolPages(shape(rows)))
	in, err := golden.GenMLA(cfg, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.1, Poison: true})
	if err != nil {
		return err
	}
	wantOut, wantLSE, err := golden.MLADecode(cfg, in)
	if err != nil {
		return err
	}

	var bufs []*runtime.Buffer
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	var allocErr error
	keep := func(b *runtime.Buffer, err error) *runtime.Buffer {
		if b != nil {
			bufs = append(bufs, b)
		}
		if allocErr == nil {
			allocErr = err
		}
		return b
	}
	q := keep(dev.FromBF16(bf16Bits(in.Q)))
	s0, s1 := in.Segments[0], in.Segments[1]
	cache0, idx0, len0 := keep(dev.FromU8(s0.Cache)), keep(dev.FromI32(s0.Idx)), keep(dev.FromI32(s0.Len))
	cache1, idx1, len1 := keep(dev.FromU8(s1.Cache)), keep(dev.FromI32(s1.Idx)), keep(dev.FromI32(s1.Len))
	sink := keep(dev.FromF32(in.Sink))
	outBytes, lseBytes := int64(rows)*decode.MLADecodeOutBytesPerRow, int64(rows)*decode.MLADecodeLSEBytesPerRow
	out := keep(dev.Alloc(outBytes))
	lse := keep(dev.Alloc(lseBytes))
	if allocErr != nil {
		return allocErr
	}

	qt, qh := cfg.QStrides()
	g0, g1 := cfg.Segment(0), cfg.Segment(1)
	// slots: the pool's size (pages x page size); an index outside [0, slots) is
	// treated like -1, never read.
	launch := func() error {
		return k.Launch(rows, q, int64(qt), int64(qh),
			cache0, int64(g0.PageStride), int32(g0.Slots()), idx0, int64(g0.K), len0,
			cache1, int64(g1.PageStride), int32(g1.Slots()), idx1, int64(g1.K), len1,
			sink, out, lse)
	}
	if err := launch(); err != nil {
		return err
	}
	gotOut := make([]uint16, outBytes/2)
	gotLSE := make([]float32, lseBytes/4)
	if err := out.CopyOutBF16(gotOut); err != nil {
		return err
	}
	if err := lse.CopyOutF32(gotLSE); err != nil {
		return err
	}
	outs := make([]dtype.BF16, len(gotOut))
	for i, u := range gotOut {
		outs[i] = dtype.BF16(u)
	}
	outTol := golden.MLAOutTolerance
	if decode.MLADecodePrecision == "bf16p" { // generated with -precision bf16p: its own tolerance
		outTol = golden.MLAOutToleranceBF16P
	}
	reports := []golden.Report{
		golden.Compare("out", outs, wantOut, []int{cfg.T, cfg.H, cfg.D()}, outTol),
		golden.Compare("lse", gotLSE, wantLSE, []int{cfg.T, cfg.H}, golden.MLALSETolerance),
	}
	ok := true
	fmt.Printf("%d rows:\n", rows)
	for _, r := range reports {
		fmt.Print(r.String())
		ok = ok && r.OK()
	}
	if !ok {
		return fmt.Errorf("outputs outside tolerance")
	}

	ms, err := dev.Time(func() error {
		for i := 0; i < iters; i++ {
			if err := launch(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("PASS at %d rows; %.2f us per launch (mean of %d)\n", rows, float64(ms)*1000/float64(iters), iters)
	return nil
}

// bf16Bits returns bf16 values as the uint16 bits the runtime copies.
func bf16Bits(x []dtype.BF16) []uint16 {
	u := make([]uint16, len(x))
	for i, v := range x {
		u[i] = uint16(v)
	}
	return u
}
