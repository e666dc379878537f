// one_launch.cu: the split decode's combine as a second launch (today's plan: mla_combine_N,
// one CTA per (head, row), after the decode through grid dependency control) against the
// same combine done inside the decode launch by the last CTA of each (row, head block) to
// finish (an atomic ticket per (row, head block) in the workspace, atom.inc wrapping to 0 so
// no call needs a memset). Issue 30 items 0 and 4: is one launch faster at small batches?
//
// The decode is synthetic: each CTA of 128 threads spins SPIN cycles (a decode chunk's
// latency) and writes its chunk's partial as the generated kernels do: 16 heads x 512 fp32
// (o / l) and 16 lse2, part r * S + s. What differs between the variants is only what runs
// after the partials are written, so the difference of their times is the combine's cost.
// Each call is timed alone with CUDA events (median of ITERS); the float4 and one-launch
// combines' outputs are compared with today's.
//
//   nvcc -O3 -arch=sm_90 -o one_launch one_launch.cu && ./one_launch
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                              \
	do {                                                                                   \
		cudaError_t e = (x);                                                               \
		if (e != cudaSuccess) {                                                            \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
			exit(1);                                                                       \
		}                                                                                  \
	} while (0)

constexpr int D = 512, HB = 16, THREADS = 128;

__device__ void spin(long long cycles) {
	long long t0 = clock64();
	while (clock64() - t0 < cycles) {
	}
}

// The chunk's partial: values that differ per (row, chunk, head, d) so a wrong weight shows.
__device__ float part_o(int r, int s, int h, int d) { return __sinf(0.01f * d + 0.7f * s + 0.3f * h + r); }
__device__ float part_lse(int r, int s, int h) { return 3.0f * __sinf(1.3f * s + 0.5f * h + r); }

__device__ void write_partial(float* ws_o, float* ws_lse, int H, int S) {
	int s = blockIdx.x, hb = blockIdx.y, r = blockIdx.z, tid = threadIdx.x;
	int part = r * S + s;
	for (int hh = 0; hh < HB; hh++) {
		int h = hb * HB + hh;
		float4 v;
		int d = tid * 4;
		v.x = part_o(r, s, h, d), v.y = part_o(r, s, h, d + 1), v.z = part_o(r, s, h, d + 2), v.w = part_o(r, s, h, d + 3);
		*(float4*)&ws_o[((size_t)part * H + h) * D + d] = v;
	}
	if (tid < HB) ws_lse[part * H + hb * HB + tid] = part_lse(r, s, hb * HB + tid);
}

__global__ void __launch_bounds__(THREADS) decode(float* ws_o, float* ws_lse, int H, int S, long long cycles) {
	asm volatile("griddepcontrol.launch_dependents;");
	spin(cycles);
	write_partial(ws_o, ws_lse, H, S);
}

// Today's mla_combine_N: one CTA per (head, row), each thread D/128 scalar elements
// (tid + 128 j), the chunk loop unrolled (here to at most 64, S at run time).
template <bool VEC>
__global__ void __launch_bounds__(THREADS) combine(const float* ws_o, const float* ws_lse, __nv_bfloat16* out, float* lse,
                                                   int H, int S) {
	asm volatile("griddepcontrol.wait;" ::: "memory");
	int h = blockIdx.x, r = blockIdx.y, tid = threadIdx.x;
	float m = -INFINITY;
	float l2[64];
#pragma unroll
	for (int s = 0; s < 64; s++)
		if (s < S) l2[s] = ws_lse[(r * S + s) * H + h], m = fmaxf(m, l2[s]);
	float w[64], L = 0;
#pragma unroll
	for (int s = 0; s < 64; s++)
		if (s < S) w[s] = exp2f(l2[s] - m), L += w[s];
	float acc[4] = {0, 0, 0, 0};
#pragma unroll
	for (int s = 0; s < 64; s++) {
		if (s >= S) break;
		const float* o = &ws_o[((size_t)(r * S + s) * H + h) * D];
		if (VEC) {
			float4 v = *(const float4*)&o[tid * 4];
			acc[0] += w[s] * v.x, acc[1] += w[s] * v.y, acc[2] += w[s] * v.z, acc[3] += w[s] * v.w;
		} else {
#pragma unroll
			for (int j = 0; j < 4; j++) acc[j] += w[s] * o[tid + THREADS * j];
		}
	}
	for (int j = 0; j < 4; j++) {
		int d = VEC ? tid * 4 + j : tid + THREADS * j;
		out[(size_t)(r * H + h) * D + d] = __float2bfloat16(acc[j] / L);
	}
	if (tid == 0) lse[r * H + h] = (m + log2f(L)) * 0.69314718f;
}

// One launch: the last CTA of (row, head block) to write its partial combines the block's 16
// heads. Release: every thread's stores, a fence, the barrier, one thread's ticket. Acquire:
// the ticket, a fence, the barrier, then loads that bypass L1 (ld.global.cg).
__global__ void __launch_bounds__(THREADS) decode_last_combines(float* ws_o, float* ws_lse, unsigned* tickets,
                                                                __nv_bfloat16* out, float* lse, int H, int S,
                                                                long long cycles) {
	spin(cycles);
	write_partial(ws_o, ws_lse, H, S);
	__shared__ int last;
	__shared__ float w[64][HB], inv[HB];
	int hb = blockIdx.y, r = blockIdx.z, tid = threadIdx.x;
	__threadfence();
	__syncthreads();
	if (tid == 0) last = atomicInc(&tickets[r * gridDim.y + hb], S - 1) == unsigned(S - 1);
	__syncthreads();
	if (!last) return;
	__threadfence();
	for (int i = tid; i < S * HB; i += THREADS) w[i / HB][i % HB] = __ldcg(&ws_lse[(r * S + i / HB) * H + hb * HB + i % HB]);
	__syncthreads();
	if (tid < HB) {
		float m = -INFINITY, L = 0;
		for (int s = 0; s < S; s++) m = fmaxf(m, w[s][tid]);
		for (int s = 0; s < S; s++) w[s][tid] = exp2f(w[s][tid] - m), L += w[s][tid];
		inv[tid] = 1 / L;
		lse[r * H + hb * HB + tid] = (m + log2f(L)) * 0.69314718f;
	}
	__syncthreads();
	for (int hh = 0; hh < HB; hh++) {
		int h = hb * HB + hh;
		float4 a = {0, 0, 0, 0};
#pragma unroll 8
		for (int s = 0; s < S; s++) {
			float4 v = __ldcg((const float4*)&ws_o[((size_t)(r * S + s) * H + h) * D + tid * 4]);
			float ws = w[s][hh];
			a.x += ws * v.x, a.y += ws * v.y, a.z += ws * v.z, a.w += ws * v.w;
		}
		__nv_bfloat16* o = &out[(size_t)(r * H + h) * D + tid * 4];
		o[0] = __float2bfloat16(a.x * inv[hh]), o[1] = __float2bfloat16(a.y * inv[hh]);
		o[2] = __float2bfloat16(a.z * inv[hh]), o[3] = __float2bfloat16(a.w * inv[hh]);
	}
}

struct Bufs {
	float *ws_o, *ws_lse, *lse;
	__nv_bfloat16* out;
	unsigned* tickets;
};

enum Variant { DecodeOnly, TwoScalar, TwoVec, OneLaunch, NVariants };
const char* names[] = {"decode only", "2 launches (today's combine)", "2 launches (float4 combine)", "1 launch (last CTA combines)"};

void call(Variant v, const Bufs& b, int R, int HBs, int S, long long cycles) {
	int H = HBs * HB;
	dim3 grid(S, HBs, R);
	if (v == OneLaunch) {
		decode_last_combines<<<grid, THREADS>>>(b.ws_o, b.ws_lse, b.tickets, b.out, b.lse, H, S, cycles);
		return;
	}
	decode<<<grid, THREADS>>>(b.ws_o, b.ws_lse, H, S, cycles);
	if (v == DecodeOnly) return;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(H, R);
	cfg.blockDim = dim3(THREADS);
	cudaLaunchAttribute attr;
	attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	attr.val.programmaticStreamSerializationAllowed = 1;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	auto k = v == TwoScalar ? combine<false> : combine<true>;
	CK(cudaLaunchKernelEx(&cfg, k, (const float*)b.ws_o, (const float*)b.ws_lse, b.out, b.lse, H, S));
}

int main(int argc, char** argv) {
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	int khz = 0; // cudaDeviceProp.clockRate is gone in CUDA 13
	CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
	printf("# %s, %d SMs, %d MHz; median of %d calls, each timed alone (CUDA events), us\n", p.name,
	       p.multiProcessorCount, khz / 1000, iters);
	// (rows, head blocks, split): the sm_120 plan's splits on 132 SMs at H16 and H64, T1 and T8
	// (K 640: 20 tiles), and smaller splits of the same rows.
	int shapes[][3] = {{1, 1, 20}, {1, 1, 10}, {1, 1, 5}, {8, 1, 20}, {8, 1, 5}, {1, 4, 20}, {8, 4, 7}, {32, 1, 8}, {64, 1, 4}};
	long long spins[] = {0, 8000};
	int maxR = 64, maxHB = 4, maxS = 64;
	Bufs b;
	size_t nO = (size_t)maxR * maxS * maxHB * HB * D;
	CK(cudaMalloc(&b.ws_o, nO * 4));
	CK(cudaMalloc(&b.ws_lse, (size_t)maxR * maxS * maxHB * HB * 4));
	CK(cudaMalloc(&b.lse, (size_t)maxR * maxHB * HB * 4));
	CK(cudaMalloc(&b.out, (size_t)maxR * maxHB * HB * D * 2));
	CK(cudaMalloc(&b.tickets, (size_t)maxR * maxHB * 4));
	CK(cudaMemset(b.tickets, 0, (size_t)maxR * maxHB * 4));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	int bad = 0;
	for (auto& sh : shapes) {
		int R = sh[0], HBs = sh[1], S = sh[2], H = HBs * HB;
		size_t nOut = (size_t)R * H * D;
		// Today's combine's outputs are the reference the other combining variants must match.
		std::vector<__nv_bfloat16> ref(nOut), got(nOut);
		std::vector<float> refl(R * H), gotl(R * H);
		for (long long cyc : spins) {
			printf("R%-3d H%-3d S%-3d spin %5lld:", R, H, S, cyc);
			double t[NVariants], worst = 0;
			for (int v = 0; v < NVariants; v++) {
				std::vector<float> ms;
				for (int i = 0; i < iters + 20; i++) {
					CK(cudaEventRecord(e0));
					call(Variant(v), b, R, HBs, S, cyc);
					CK(cudaEventRecord(e1));
					CK(cudaEventSynchronize(e1));
					float x;
					CK(cudaEventElapsedTime(&x, e0, e1));
					if (i >= 20) ms.push_back(x * 1000);
				}
				CK(cudaGetLastError());
				std::sort(ms.begin(), ms.end());
				t[v] = ms[ms.size() / 2];
				printf("  %s %.2f", names[v], t[v]);
				if (v == DecodeOnly) continue;
				auto& o = v == TwoScalar ? ref : got;
				auto& l = v == TwoScalar ? refl : gotl;
				CK(cudaMemcpy(o.data(), b.out, nOut * 2, cudaMemcpyDeviceToHost));
				CK(cudaMemcpy(l.data(), b.lse, R * H * 4, cudaMemcpyDeviceToHost));
				CK(cudaMemset(b.out, 0, nOut * 2));
				if (v == TwoScalar) continue;
				for (size_t i = 0; i < nOut; i++)
					worst = std::max(worst, (double)fabsf(__bfloat162float(ref[i]) - __bfloat162float(got[i])));
				for (int i = 0; i < R * H; i++) worst = std::max(worst, (double)fabsf(refl[i] - gotl[i]));
			}
			if (worst > 1e-2) bad++;
			printf("  | 1 launch - 2 launches %+.2f us; outputs differ by %.2g\n", t[OneLaunch] - t[TwoScalar], worst);
		}
	}
	printf("one_launch: %s\n", bad ? "FAIL (outputs differ)" : "outputs agree");
	return bad != 0;
}
