//go:build (!cuda || !cgo) && !ptxgen_fakegpu

// Command ptxgen-gpu runs ptxgen kernels on a real GPU; this is the stand-in for builds
// without `-tags cuda`, so that `go build ./...` works everywhere and a wrongly built
// binary says how to build the right one.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "ptxgen-gpu: built without -tags cuda; build it with `make gpu-bin`")
	os.Exit(2)
}
