//go:build ptxgen_fakegpu && !cuda

package main

import "os"

// The ptxgen_fakegpu build (go build -tags ptxgen_fakegpu) runs every command with the
// emulator standing in for an sm_90 GPU: for rehearsing scripts/gpu-check.sh without one.
// Its "GPU vs emulator" comparison is trivially exact.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, emuOpener("sm_90")))
}
