// Package runtime runs ptxgen kernels on an NVIDIA GPU through the CUDA driver API
// (gorgonia.org/cu): it picks a target for the device, JIT-loads the PTX, moves buffers,
// checks arguments against the kernel's launch facts (ptx.Kernel) and times launches.
//
// Only the `cuda` build (go build -tags cuda, with cgo) talks to a GPU. gorgonia.org/cu's
// init() exits the process when no driver is present, and a binary linked against libcuda
// does not start without one, so every file importing it sits behind `//go:build cuda && cgo`.
// Any other build gets the same API whose Open returns ErrNoCUDA, so the generator and the
// tests build and run on machines with no GPU. The parts that need no GPU (argument checks,
// target choice, launch-fact validation) live in untagged files and are tested everywhere.
package runtime
