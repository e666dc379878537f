// named_barrier_race.cu: which shared accesses does compute-sanitizer racecheck order across a
// CTA barrier once some warps (a "role", warps 0-3) also synchronize on a named barrier of their
// own (`bar.sync 1, 128`)? Issue 29: the 64-head CTA's score role. Per PTX every pair below is
// ordered (every warp takes part in barrier 0's generations); this asks what the tool sees.
//
// Per iteration: bar.sync 0; [DEQ: every warp writes d[tid]; bar.sync 0; every warp reads
// d[tid ^ 64]]; the role runs nb rounds of (write s[tid]; bar.sync 1, 128; read s[tid ^ 32];
// bar.sync 1, 128); [TAIL: the role writes t[tid]; CLOSE: bar.sync 1, 128]; bar.sync 0;
// every warp reads s and t. Epilogue: bar.sync 0; warp 2 writes e[]; [CLOSE: the role's
// bar.sync 1, 128]; bar.sync 0; warp 4 reads e[].
// Build: nvcc -arch=sm_90 -lineinfo -o nbr named_barrier_race.cu
// Run:   ./nbr NB ITERS FLAGS   (FLAGS: 1 CLOSE, 2 DEQ, 4 TAIL)
#include <cstdio>
#include <cstdlib>

__global__ void role_kernel(float *out, int nb, int iters, int flags) {
	__shared__ float s[128], t[128], d[256], e[64];
	int tid = threadIdx.x, w = tid / 32, lane = tid % 32;
	bool close = flags & 1, deq = flags & 2, tail = flags & 4;
	float acc = 0;
	for (int it = 0; it < iters; ++it) {
		asm volatile("bar.sync 0;" ::: "memory");
		if (deq) {
			d[tid] = acc + it; /* DEQ write */
			asm volatile("bar.sync 0;" ::: "memory");
			acc += d[tid ^ 64]; /* DEQ read */
		}
		if (w < 4) {
			for (int b = 0; b < nb; ++b) {
				s[tid] = acc + b; /* ROLE write */
				asm volatile("bar.sync 1, 128;" ::: "memory");
				acc += s[tid ^ 32]; /* ROLE read */
				asm volatile("bar.sync 1, 128;" ::: "memory");
			}
			if (tail) {
				t[tid] = acc * 2; /* TAIL write */
				if (close) asm volatile("bar.sync 1, 128;" ::: "memory");
			}
		}
		asm volatile("bar.sync 0;" ::: "memory");
		acc += s[tid % 128] * 0.5f; /* read of ROLE writes */
		if (tail) acc += t[tid % 128]; /* TAIL read */
	}
	asm volatile("bar.sync 0;" ::: "memory");
	if (w == 2) e[lane] = acc + 1; /* EPILOGUE write */
	if (close && w < 4) asm volatile("bar.sync 1, 128;" ::: "memory");
	asm volatile("bar.sync 0;" ::: "memory");
	if (w == 4) out[blockIdx.x * 32 + lane] = e[lane]; /* EPILOGUE read */
}

int main(int argc, char **argv) {
	int nb = argc > 1 ? atoi(argv[1]) : 2, iters = argc > 2 ? atoi(argv[2]) : 2, flags = argc > 3 ? atoi(argv[3]) : 0;
	float *out;
	cudaMalloc(&out, 64 * 32 * sizeof(float));
	role_kernel<<<64, 256>>>(out, nb, iters, flags);
	cudaError_t err = cudaDeviceSynchronize();
	printf("nb=%d iters=%d flags=%d: %s\n", nb, iters, flags, cudaGetErrorString(err));
	return err != cudaSuccess;
}
