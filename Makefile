# ptxgen developer targets. `make test` is the test command (CI runs exactly that).
#
# The CUDA tools live in the git-ignored .tools/ folder, fetched from Debian's non-free
# nvidia-cuda-toolkit / nvidia-cuda-dev 11.8 packages by scripts/cuda-tools.sh.

GO ?= go
TOOLS := $(CURDIR)/.tools

# cgo flags for the `cuda` build tag: CUDA 11.8 headers and the stub libcuda.so, which only
# satisfies the linker; the real driver's libcuda.so.1 is found at run time on a GPU machine.
# Never point these at CUDA 13 headers: gorgonia.org/cu v0.9.6 does not compile against them.
CUDA_ENV := CGO_ENABLED=1 \
	CGO_CFLAGS="-I$(TOOLS)/cudadev/usr/include" \
	CGO_LDFLAGS="-L$(TOOLS)/cudadev/usr/lib/x86_64-linux-gnu/stubs"

.PHONY: all build test lint python-check python-kernels fuzz-short fuzz golden tools tools-cuda cuda-vet gpu-bin gpu-check clean-tools

all: build

build:
	$(GO) build ./...

test:
	$(GO) test ./...

# lint: gofmt, go vet, staticcheck (pinned as a tool in go.mod) and go.mod/go.sum tidy.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l reports unformatted files:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) mod tidy -diff

# python-check: the Python package's kernels are current and its CPU tests pass (CI runs it
# from .ci/run); python-kernels regenerates the kernels after a change to the generator.
python-check:
	bash scripts/check-python.sh

python-kernels:
	bash python/gen.sh

# The fuzz targets (package:Target). Their seed corpora are in each package's
# testdata/fuzz/; `make test` runs the seeds as ordinary tests.
# Each with the executions fuzz-short gives it: about 5-10 s on CI's 2 cores.
FUZZ_TARGETS = ir:FuzzParse:200000x lower:FuzzCompile:60000x ptx:FuzzParse:200000x golden:FuzzLoadVectors:4000x ptxgen:FuzzCLI:2000x ptxgen:FuzzCheckFrom:2000x cmd/ptxgen-gpu:FuzzCLI:3000x

# fuzz-short fuzzes each target for its count of executions (FUZZTIME overrides it;
# CI runs it from .ci/run); a failure leaves the input under the package's
# testdata/fuzz/ and fails the target. Counts, not durations: a time limit that ends
# while a new interesting input is being minimized fails the run with "context deadline
# exceeded" (seen in CI), whatever the input. Minimization is capped by count too.
fuzz-short:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${FUZZTIME:-$${rest#*:}}; \
		echo "fuzz $$pkg $$name for $$n"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$n -fuzzminimizetime 100x ./$$pkg; \
	done

# fuzz: one long session of one target, e.g. make fuzz TARGET=ptx:FuzzParse FUZZTIME=10m
fuzz:
	@t=$(TARGET); pkg=$${t%%:*}; name=$${t##*:}; \
	$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $${FUZZTIME:-10m} -parallel 1 ./$$pkg

# golden rewrites the golden files under testdata/ from the current generator: it is
# `go test ./... -update`, restricted to the packages whose tests define -update, because
# any other test binary exits with "flag provided but not defined: -update".
GOLDEN_PKGS = $(shell grep -rl --include='*_test.go' 'flag\.Bool."update"' . | xargs -r -n1 dirname | sort -u)

golden:
	@if [ -z "$(GOLDEN_PKGS)" ]; then echo "no package defines -update"; exit 1; fi
	$(GO) test $(GOLDEN_PKGS) -update

# tools: ptxas, cuobjdump and nvdisasm (84 MB download). Skipped when present.
# The script checks for the files itself (in milliseconds), so the targets are phony.
tools:
	bash scripts/cuda-tools.sh toolkit

# tools-cuda: cuda.h and the stub libcuda.so for building the cgo runtime (774 MB download,
# of which two files are kept). Skipped when present.
tools-cuda:
	bash scripts/cuda-tools.sh dev

# cuda-vet type-checks and builds the `cuda` variant (runtime, cmd/ptxgen-gpu and their tests)
# without a GPU, and checks that only the allowed packages link gorgonia.org/cu: its init()
# exits the process when there is no driver, so the plain tools must never import it.
cuda-vet: tools-cuda
	$(CUDA_ENV) $(GO) vet -tags cuda ./...
	$(CUDA_ENV) $(GO) build -tags cuda ./...
	$(CUDA_ENV) $(GO) test -tags cuda -c -o /dev/null ./runtime
	bash scripts/check-cuda-deps.sh

# gpu-bin builds the binaries to carry to a GPU machine (which has no Go toolchain):
# ptxgen-gpu (check -gpu, dump), the runtime's GPU tests and lower's (user kernels, math
# ops), against CUDA 11.8 headers.
# Carry build/ and run `make gpu-check` (or `bash scripts/gpu-check.sh`) there.
gpu-bin: tools-cuda
	mkdir -p build
	$(CUDA_ENV) $(GO) build -tags cuda -o build/ptxgen-gpu ./cmd/ptxgen-gpu
	$(CUDA_ENV) $(GO) test -c -tags cuda -o build/runtime.test ./runtime
	$(CUDA_ENV) $(GO) test -c -tags cuda -o build/lower.test ./lower
	cd examples/rmsnorm && $(CUDA_ENV) GOWORK=off $(GO) build -tags cuda -o ../../build/rmsnorm .

# gpu-check runs on the GPU machine, with build/ from gpu-bin: the runtime tests, the gemm and
# mla_decode shape matrices (GPU vs reference vs emulator), CUDA 13 ptxas on the sm_120
# goldens and compute-sanitizer; results in $OUT or build/gpu-check/. Rehearse it without a
# GPU: go build -tags ptxgen_fakegpu -o /tmp/fake ./cmd/ptxgen-gpu, then BIN=/tmp/fake
# PTXAS=... SANITIZER=... QUICK=1 bash scripts/gpu-check.sh (see the script's header).
gpu-check:
	bash scripts/gpu-check.sh

clean-tools:
	rm -rf $(TOOLS)
