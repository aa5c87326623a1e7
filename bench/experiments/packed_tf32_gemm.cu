// Experiment: the recurrent GEMM C[M, N] (+)= A[M, K] · W[N, K]ᵀ for few rows
// (M = batch <= 64) with TF32 tensor cores, the weights packed once per call
// into the order the mma.sync fragments want them, optionally in 20 bits per
// weight (TF32 keeps 19: sign, 8 exponent, 10 mantissa bits; rounded to TF32
// at packing, so the product is the TF32 product). At `wide` the GEMM streams
// 64 MiB of fp32 weights from HBM every step; 20-bit weights are 40 MiB.
//
// Each block takes a column range and a K range; the blocks of one column
// range form a cluster and add their partial products through distributed
// shared memory (deterministic, no atomics). A for the block's K range is
// staged in shared memory once; weights go straight from global memory to
// registers, several 16-byte loads in flight per thread.
#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>
namespace cg = cooperative_groups;
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)

__device__ __forceinline__ uint32_t tf32Bits(float x) { uint32_t r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ uint4 ldStream4(const void *p) {
  uint4 v; asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v;
}
__device__ __forceinline__ uint32_t ldStream1(const void *p) { uint32_t v; asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p)); return v; }
__device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Packing. Lane (g, t) = (lane / 4, lane % 4) of the warp that multiplies
// n-tile nt (8 rows of W) needs W[8 nt + g][k + t] and W[8 nt + g][k + t + 4]
// for k-step k. A "quad" is 4 k-steps (32 values of K): 8 values per lane,
// element i = 2 s + j holding W[8 nt + g][32 q + 8 s + t + 4 j].
__device__ __forceinline__ float quadElement(const float *W, int K, int nt, int q, int lane, int i) {
  int g = lane / 4, t = lane % 4, s = i / 2, j = i % 2;
  return W[(size_t)(8 * nt + g) * K + 32 * q + 8 * s + t + 4 * j];
}
// fp32 layout: two uint4 per (nt, q, lane), [nt][q][half][lane].
__global__ void packF32(const float *W, int N, int K, uint4 *out) {
  size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x, quads = (size_t)N / 8 * (K / 32) * 32;
  if (idx >= quads) return;
  int lane = idx % 32; size_t nq = idx / 32; int q = nq % (K / 32), nt = nq / (K / 32);
  uint32_t v[8]; for (int i = 0; i < 8; ++i) v[i] = tf32Bits(quadElement(W, K, nt, q, lane, i));
  out[(nq * 2 + 0) * 32 + lane] = make_uint4(v[0], v[1], v[2], v[3]);
  out[(nq * 2 + 1) * 32 + lane] = make_uint4(v[4], v[5], v[6], v[7]);
}
// 20-bit layout: per (nt, q, lane) a uint4 of the 8 upper halves and a uint32
// of the 8 next nibbles (the last 3 TF32 mantissa bits and a zero bit).
__global__ void packTf20(const float *W, int N, int K, uint4 *hi, uint32_t *lo) {
  size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x, quads = (size_t)N / 8 * (K / 32) * 32;
  if (idx >= quads) return;
  int lane = idx % 32; size_t nq = idx / 32; int q = nq % (K / 32), nt = nq / (K / 32);
  uint32_t h[8], l = 0;
  for (int i = 0; i < 8; ++i) { uint32_t b = tf32Bits(quadElement(W, K, nt, q, lane, i)); h[i] = b >> 16; l |= ((b >> 12) & 0xf) << (4 * i); }
  hi[idx] = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
  lo[idx] = l;
}

template <bool TF20> struct Quad { uint4 a, b; uint32_t l; };
template <bool TF20> __device__ __forceinline__ void loadQuad(Quad<TF20> &d, const void *hiBase, const uint32_t *lo, size_t nq, int lane) {
  if constexpr (TF20) { d.a = ldStream4((const uint4 *)hiBase + nq * 32 + lane); d.l = ldStream1(lo + nq * 32 + lane); }
  else { d.a = ldStream4((const uint4 *)hiBase + (nq * 2) * 32 + lane); d.b = ldStream4((const uint4 *)hiBase + (nq * 2 + 1) * 32 + lane); }
}
template <bool TF20> __device__ __forceinline__ void unpack(const Quad<TF20> &d, uint32_t (&v)[8]) {
  if constexpr (TF20) {
    uint32_t w[4] = {d.a.x, d.a.y, d.a.z, d.a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = (w[i] << 16) | (((d.l >> (8 * i)) & 0xf) << 12);
      v[2 * i + 1] = (w[i] & 0xffff0000u) | (((d.l >> (8 * i + 4)) & 0xf) << 12);
    }
  } else { v[0] = d.a.x; v[1] = d.a.y; v[2] = d.a.z; v[3] = d.a.w; v[4] = d.b.x; v[5] = d.b.y; v[6] = d.b.z; v[7] = d.b.w; }
}

// MT m-tiles of 16 rows (M <= 16 MT), WARPS warps each with NT n-tiles,
// SPLIT blocks per cluster along K, U quads per pipeline stage.
template <int MT, int WARPS, int NT, int SPLIT, int U, bool TF20>
__global__ void __launch_bounds__(WARPS * 32) skinnyPacked(const float *A, int lda, const void *Whi, const uint32_t *Wlo, float *C, int ldc, int M, int K, int accumulate) {
  constexpr int kCols = WARPS * NT * 8, kRows = MT * 16;
  extern __shared__ float smem[];
  const int kRange = K / SPLIT, rank = blockIdx.y, k0 = rank * kRange, stride = kRange + 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int quadsPerRow = K / 32, q0 = k0 / 32, nq = kRange / 32;
  const int ntBase = (blockIdx.x * kCols) / 8 + warp * NT;
  // Start the weight stream before staging A.
  Quad<TF20> cur[U][NT], nxt[U][NT];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int n = 0; n < NT; ++n) if (u < nq) loadQuad<TF20>(cur[u][n], Whi, Wlo, (size_t)(ntBase + n) * quadsPerRow + q0 + u, lane);
  // A's rows for this K range, copied asynchronously (the tensor cores read
  // the fp32 bits as TF32); rows past M are zero.
  for (int i = threadIdx.x; i < kRows * (kRange / 4); i += WARPS * 32) {
    int r = i / (kRange / 4), c = (i % (kRange / 4)) * 4;
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(smem + r * stride + c);
    const float *src = A + (size_t)(r < M ? r : 0) * lda + k0 + c;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(r < M ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
  float acc[NT][MT][4] = {};
  for (int q = 0; q < nq; q += U) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int n = 0; n < NT; ++n) if (q + U + u < nq) loadQuad<TF20>(nxt[u][n], Whi, Wlo, (size_t)(ntBase + n) * quadsPerRow + q0 + q + U + u, lane);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (q + u >= nq) break;
      uint32_t b[NT][8];
#pragma unroll
      for (int n = 0; n < NT; ++n) unpack<TF20>(cur[u][n], b[n]);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        int kk = (q + u) * 32 + 8 * s;
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          const float *am = smem + (m * 16) * stride + kk;
          uint32_t a0 = __float_as_uint(am[g * stride + t]), a1 = __float_as_uint(am[(g + 8) * stride + t]);
          uint32_t a2 = __float_as_uint(am[g * stride + t + 4]), a3 = __float_as_uint(am[(g + 8) * stride + t + 4]);
#pragma unroll
          for (int n = 0; n < NT; ++n) mma(acc[n][m], a0, a1, a2, a3, b[n][2 * s], b[n][2 * s + 1]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int n = 0; n < NT; ++n) cur[u][n] = nxt[u][n];
  }
  // Partial tile [kRows][kCols] into shared memory (A is no longer needed).
  __syncthreads();
  float *part = smem;
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      int col = (warp * NT + n) * 8 + 2 * t, row = m * 16 + g;
      part[row * kCols + col] = acc[n][m][0]; part[row * kCols + col + 1] = acc[n][m][1];
      part[(row + 8) * kCols + col] = acc[n][m][2]; part[(row + 8) * kCols + col + 1] = acc[n][m][3];
    }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  // Rank r adds up rows r, r + SPLIT, ... over the cluster, in rank order.
  for (int i = threadIdx.x; i < kRows / SPLIT * kCols; i += WARPS * 32) {
    int row = (i / kCols) * SPLIT + rank, col = i % kCols;
    if (row >= M) continue;
    float s = 0;
#pragma unroll
    for (int r = 0; r < SPLIT; ++r) s += cluster.map_shared_rank(part, r)[row * kCols + col];
    float *c = C + (size_t)row * ldc + blockIdx.x * kCols + col;
    *c = accumulate ? *c + s : s;
  }
  cluster.sync();
}


// Each warp's weights staged through its own ring of STAGES shared-memory
// slots by cp.async (each lane copies and later reads only its own bytes, so
// no barrier is needed), 20-bit weights only. A warp takes NT n-tiles (each
// A fragment read from shared memory then feeds NT products) and KW warps
// share each group of NT n-tiles, splitting the block's K range between them;
// partial tiles [KW][rows][cols]. lib/Runtime/Cuda/PackedTf32Gemm.cu is the
// configuration NT = 4, KW = 4, STAGES = 2 of this kernel.
template <int MT, int TILES, int NT, int KW, int SPLIT, int STAGES>
__global__ void __launch_bounds__(TILES / NT * KW * 32) skinnyRing(const float *A, int lda, const void *Whi, const uint32_t *Wlo, float *C, int ldc, int M, int K, int accumulate) {
  constexpr int GROUPS = TILES / NT, WARPS = GROUPS * KW, kCols = TILES * 8, kRows = MT * 16;
  extern __shared__ float smem[];
  const int kRange = K / SPLIT, rank = blockIdx.y, k0 = rank * kRange, stride = kRange + 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int group = warp % GROUPS, kGroup = warp / GROUPS;
  const int quadsPerRow = K / 32, nqAll = kRange / 32, nq = nqAll / KW, qBase = kGroup * nq, q0 = k0 / 32 + qBase;
  const int nt0 = (blockIdx.x * kCols) / 8 + group * NT;
  uint4 *ringHi = (uint4 *)(smem + kRows * stride) + (size_t)warp * STAGES * NT * 32;
  uint32_t *ringLo = (uint32_t *)((uint4 *)(smem + kRows * stride) + (size_t)WARPS * STAGES * NT * 32) + (size_t)warp * STAGES * NT * 32;
  auto issue = [&](int q) {
    if (q < nq)
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        int slot = q % STAGES; size_t nqIdx = (size_t)(nt0 + n) * quadsPerRow + q0 + q;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((uint32_t)__cvta_generic_to_shared(ringHi + (slot * NT + n) * 32 + lane)), "l"((const uint4 *)Whi + nqIdx * 32 + lane));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"((uint32_t)__cvta_generic_to_shared(ringLo + (slot * NT + n) * 32 + lane)), "l"(Wlo + nqIdx * 32 + lane));
      }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  for (int q = 0; q < STAGES - 1; ++q) issue(q);
  for (int i = threadIdx.x; i < kRows * (kRange / 4); i += WARPS * 32) {
    int r = i / (kRange / 4), c = (i % (kRange / 4)) * 4;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((uint32_t)__cvta_generic_to_shared(smem + r * stride + c)), "l"(A + (size_t)(r < M ? r : 0) * lda + k0 + c), "r"(r < M ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
  float acc[NT][MT][4] = {};
  for (int q = 0; q < nq; ++q) {
    issue(q + STAGES - 1);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 1) : "memory");
    int slot = q % STAGES;
    uint32_t b[NT][8];
#pragma unroll
    for (int n = 0; n < NT; ++n) { Quad<true> d; d.a = ringHi[(slot * NT + n) * 32 + lane]; d.l = ringLo[(slot * NT + n) * 32 + lane]; unpack<true>(d, b[n]); }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      int kk = (qBase + q) * 32 + 8 * s;
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        const float *am = smem + (m * 16) * stride + kk;
        uint32_t a0 = __float_as_uint(am[g * stride + t]), a1 = __float_as_uint(am[(g + 8) * stride + t]);
        uint32_t a2 = __float_as_uint(am[g * stride + t + 4]), a3 = __float_as_uint(am[(g + 8) * stride + t + 4]);
#pragma unroll
        for (int n = 0; n < NT; ++n) mma(acc[n][m], a0, a1, a2, a3, b[n][2 * s], b[n][2 * s + 1]);
      }
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
  float *part = smem + kGroup * kRows * kCols;
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
  for (int m = 0; m < MT; ++m) {
    int col = (group * NT + n) * 8 + 2 * t, row = m * 16 + g;
    part[row * kCols + col] = acc[n][m][0]; part[row * kCols + col + 1] = acc[n][m][1];
    part[(row + 8) * kCols + col] = acc[n][m][2]; part[(row + 8) * kCols + col + 1] = acc[n][m][3];
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  for (int i = threadIdx.x; i < kRows / SPLIT * kCols; i += WARPS * 32) {
    int row = (i / kCols) * SPLIT + rank, col = i % kCols;
    if (row >= M) continue;
    float s = 0;
#pragma unroll
    for (int r = 0; r < SPLIT; ++r) {
      const float *remote = cluster.map_shared_rank(smem, r);
#pragma unroll
      for (int kg = 0; kg < KW; ++kg) s += remote[(kg * kRows + row) * kCols + col];
    }
    float *c = C + (size_t)row * ldc + blockIdx.x * kCols + col;
    *c = accumulate ? *c + s : s;
  }
  cluster.sync();
}

__global__ void fillf(float *p, size_t n, float s, unsigned seed) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }
// The dependent step kernel (LSTM): reads the gates, writes h (the next A).
__global__ void lstmStep(const float *gt, float *c, float *h, int B, int H) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  const float *g = gt + (size_t)b * 4 * H;
  float cn = sig(g[H + j]) * c[(size_t)b * H + j] + sig(g[j]) * tanhf(g[2 * H + j]);
  c[(size_t)b * H + j] = cn; h[(size_t)b * H + j] = sig(g[3 * H + j]) * tanhf(cn);
}

struct Problem { const char *name; int M, N, K, steps; };

// A kernel configuration to measure: what it is called in the output and how
// it is launched (grid N / cols x split, clusters of split blocks).
struct Variant {
  char label[96];
  const void *kernel;
  int rows, cols, threads, split;
  size_t smem;
  bool tf20;
};

// The register-pipelined kernel (skinnyPacked).
template <int MT, int WARPS, int NT, int SPLIT, int U, bool TF20> Variant registers(int K) {
  Variant v{{}, (const void *)skinnyPacked<MT, WARPS, NT, SPLIT, U, TF20>, MT * 16, WARPS * NT * 8, WARPS * 32, SPLIT,
            std::max(sizeof(float) * MT * 16 * (K / SPLIT + 4), sizeof(float) * MT * 16 * WARPS * NT * 8), TF20};
  snprintf(v.label, sizeof v.label, "%s registers mt%d warps%d nt%d split%d u%d", TF20 ? "tf20" : "f32 ", MT, WARPS, NT, SPLIT, U);
  return v;
}

// The ring kernel (skinnyRing).
template <int MT, int TILES, int NT, int KW, int SPLIT, int STAGES> Variant ring(int K) {
  constexpr int WARPS = TILES / NT * KW;
  Variant v{{}, (const void *)skinnyRing<MT, TILES, NT, KW, SPLIT, STAGES>, MT * 16, TILES * 8, WARPS * 32, SPLIT,
            std::max(sizeof(float) * MT * 16 * (K / SPLIT + 4) + (size_t)STAGES * WARPS * NT * 32 * 20, sizeof(float) * MT * 16 * TILES * 8 * KW),
            true};
  snprintf(v.label, sizeof v.label, "tf20 ring%d mt%d warps%d nt%d kw%d split%d", STAGES, MT, WARPS, NT, KW, SPLIT);
  return v;
}

// Checks one variant against cuBLAS in full fp32 and times it against
// cublasGemmEx (TF32) in CUDA graphs, the GEMM alone and with the dependent
// LSTM step kernel (ours then including the packing, once per graph).
void measure(const Problem &p, const Variant &v, cublasHandle_t hd, cudaStream_t s) {
  int M = p.M, N = p.N, K = p.K, H = N / 4;
  if (N % v.cols || K % (32 * v.split) || M > v.rows) { printf("%s: shape not supported by %s\n", p.name, v.label); return; }
  CK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)v.smem));
  float *A, *W, *G, *R, *c; void *hi; uint32_t *lo = nullptr;
  size_t nw = (size_t)N * K, ng = (size_t)p.steps * M * N;
  CK(cudaMalloc(&A, 4ull * M * K)); CK(cudaMalloc(&W, 4 * nw)); CK(cudaMalloc(&G, 4 * ng)); CK(cudaMalloc(&R, 4 * ng)); CK(cudaMalloc(&c, 4ull * M * H));
  CK(cudaMalloc(&hi, v.tf20 ? 2 * nw : 4 * nw)); if (v.tf20) CK(cudaMalloc(&lo, nw / 2));
  fillf<<<(M * K + 255) / 256, 256>>>(A, (size_t)M * K, 1.f, 1); fillf<<<(nw + 255) / 256, 256>>>(W, nw, 0.05f, 7);
  fillf<<<(ng + 255) / 256, 256>>>(G, ng, 1.f, 3); CK(cudaMemcpy(R, G, 4 * ng, cudaMemcpyDeviceToDevice)); CK(cudaMemset(c, 0, 4ull * M * H));
  size_t quads = nw / 256 * 32;
  auto pack = [&]() { if (v.tf20) packTf20<<<(quads + 255) / 256, 256, 0, s>>>(W, N, K, (uint4 *)hi, lo); else packF32<<<(quads + 255) / 256, 256, 0, s>>>(W, N, K, (uint4 *)hi); };
  cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
  cfg.gridDim = dim3(N / v.cols, v.split); cfg.blockDim = dim3(v.threads); cfg.dynamicSmemBytes = v.smem; cfg.stream = s;
  attr[0].id = cudaLaunchAttributeClusterDimension; attr[0].val.clusterDim.x = 1; attr[0].val.clusterDim.y = v.split; attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr; cfg.numAttrs = 1;
  float one = 1;
  const float *aArg = A; const void *hiArg = hi; const uint32_t *loArg = lo; int ldaArg = K, ldcArg = N, mArg = M, kArg = K, accArg = 1;
  auto ours = [&](float *gt) {
    void *args[] = {&aArg, &ldaArg, &hiArg, &loArg, &gt, &ldcArg, &mArg, &kArg, &accArg};
    CK(cudaLaunchKernelExC(&cfg, v.kernel, args));
  };
  auto theirs = [&](float *gt) { CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, A, CUDA_R_32F, K, &one, gt, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)); };
  // Correctness: ours and cuBLAS TF32 against cuBLAS in full fp32, one GEMM
  // each onto the same C.
  float *X; CK(cudaMalloc(&X, 4ull * M * N)); CK(cudaMemcpy(X, G, 4ull * M * N, cudaMemcpyDeviceToDevice));
  pack(); ours(G); theirs(R);
  CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, CUDA_R_32F, K, A, CUDA_R_32F, K, &one, X, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CK(cudaStreamSynchronize(s));
  std::vector<float> a((size_t)M * N), b((size_t)M * N), x((size_t)M * N);
  CK(cudaMemcpy(a.data(), G, 4ull * M * N, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b.data(), R, 4ull * M * N, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(x.data(), X, 4ull * M * N, cudaMemcpyDeviceToHost));
  double md = 0, mc = 0, mx = 0; for (size_t i = 0; i < a.size(); ++i) { md = std::max(md, (double)fabs(a[i] - x[i])); mc = std::max(mc, (double)fabs(b[i] - x[i])); mx = std::max(mx, (double)fabs(x[i])); }
  cudaFree(X);
  auto timeIt = [&](int which, bool withStep) {
    cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (which == 2) pack();
    for (int i = 0; i < p.steps; ++i) {
      float *gt = (which ? G : R) + (size_t)i * M * N;
      if (which) ours(gt); else theirs(gt);
      if (withStep) lstmStep<<<dim3((H + 255) / 256, M), 256, 0, s>>>(gt, c, A, M, H);
    }
    CK(cudaStreamEndCapture(s, &g)); cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
    for (int it = 0; it < 15; ++it) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (it >= 3) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
    return 1000 * ts[ts.size() / 2] / p.steps;
  };
  bool step = N % 4 == 0 && N / 4 == K;
  float cub = timeIt(0, false), mine = timeIt(1, false), cubStep = step ? timeIt(0, true) : 0, mineStep = step ? timeIt(2, true) : 0;
  printf("%-12s M%3d N%5d K%5d %s smem %3zuK grid %4d: ours %6.2f cuBLAS %6.2f us (%.2fx, %4.0f GB/s) | step+pack %6.2f cuBLAS step %6.2f (%.2fx) | max|err| vs fp32: ours %.1e cuBLAS-TF32 %.1e of %.1e\n",
         p.name, M, N, K, v.label, v.smem >> 10, N / v.cols * v.split, mine, cub, cub / mine,
         (v.tf20 ? 2.5 : 4.0) * N * K / (mine * 1e3), mineStep, cubStep, step ? cubStep / mineStep : 0, md, mc, mx);
  cudaFree(A); cudaFree(W); cudaFree(G); cudaFree(R); cudaFree(c); cudaFree(hi); if (lo) cudaFree(lo);
}

int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd)); cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  Problem wide{"wide lstm", 32, 8192, 2048, 50}, wideGru{"wide gru", 32, 6144, 2048, 50}, wide16{"wide B16", 16, 8192, 2048, 50},
      medium{"medium lstm", 64, 4096, 1024, 100};
  // The way there: weights through registers (fp32 and 20-bit), then rings
  // with a warp per n-tile, more warps along K, more n-tiles per warp.
  for (const Variant &v : {registers<2, 8, 2, 2, 4, false>(wide.K), registers<2, 8, 2, 2, 4, true>(wide.K), ring<2, 16, 1, 1, 2, 4>(wide.K),
                           ring<2, 16, 1, 2, 2, 4>(wide.K), ring<2, 16, 2, 2, 2, 4>(wide.K), ring<2, 16, 2, 2, 2, 3>(wide.K),
                           ring<2, 16, 4, 2, 2, 3>(wide.K), ring<2, 16, 2, 4, 2, 2>(wide.K), ring<2, 16, 4, 4, 2, 2>(wide.K)})
    measure(wide, v, hd, s);
  // The runtime's configuration at other shapes (M <= 16: one m-tile).
  measure(wideGru, ring<2, 16, 4, 4, 2, 2>(wideGru.K), hd, s);
  measure(wide16, ring<1, 16, 4, 4, 2, 2>(wide16.K), hd, s);
  measure(medium, ring<4, 16, 4, 4, 2, 2>(medium.K), hd, s);
  return 0;
}
