// skip_path_barrier.cu: a role region (warps 0-3) synchronizing on a barrier of every thread
// while the other warps take the same barrier at another instruction (their skip path): what
// do compute-sanitizer's synccheck and racecheck say, per barrier form? (issue 29)
// MODE 0: bar.sync 0; MODE 1: bar.sync 0, 256; MODE 2: bar.sync 1, 256; MODE 3: the role's
// bar.sync 1, 128 in the region (no skip-path barrier), as 0972ef8 did.
// Per round: the role writes s[tid], barrier, reads s[tid ^ 32], barrier; after the region
// bar.sync 0 and every warp reads s; the epilogue's warp 2 writes e[], bar.sync 0, warp 4
// reads it. Build: nvcc -arch=sm_90 -lineinfo -o spb skip_path_barrier.cu; run: ./spb MODE ITERS
#include <cstdio>
#include <cstdlib>

template <int MODE> __device__ void bar() {
	if (MODE == 0) asm volatile("bar.sync 0;" ::: "memory");
	if (MODE == 1) asm volatile("bar.sync 0, 256;" ::: "memory");
	if (MODE == 2) asm volatile("bar.sync 1, 256;" ::: "memory");
	if (MODE == 3) asm volatile("bar.sync 1, 128;" ::: "memory");
}

template <int MODE> __global__ void k(float *out, int iters) {
	__shared__ float s[128], e[64];
	int tid = threadIdx.x, w = tid / 32, lane = tid % 32;
	float acc = 0;
	for (int it = 0; it < iters; ++it) {
		asm volatile("bar.sync 0;" ::: "memory");
		if (w < 4) {
			s[tid] = acc + it;
			bar<MODE>();
			acc += s[tid ^ 32];
			bar<MODE>();
			s[tid] = acc;
		} else if (MODE != 3) {
			bar<MODE>();
			bar<MODE>();
		}
		asm volatile("bar.sync 0;" ::: "memory");
		acc += s[tid % 128];
	}
	asm volatile("bar.sync 0;" ::: "memory");
	if (w == 2) e[lane] = acc + 1;
	asm volatile("bar.sync 0;" ::: "memory");
	if (w == 4) out[blockIdx.x * 32 + lane] = e[lane];
}

int main(int argc, char **argv) {
	int mode = argc > 1 ? atoi(argv[1]) : 0, iters = argc > 2 ? atoi(argv[2]) : 2;
	float *out;
	cudaMalloc(&out, 64 * 32 * sizeof(float));
	void (*ks[])(float *, int) = {k<0>, k<1>, k<2>, k<3>};
	ks[mode]<<<64, 256>>>(out, iters);
	cudaError_t err = cudaDeviceSynchronize();
	printf("mode=%d iters=%d: %s\n", mode, iters, cudaGetErrorString(err));
	return err != cudaSuccess;
}
