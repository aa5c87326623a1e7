// Experiment: the recurrent products as our own K-split TF32 GEMM that is
// launched early (programmatic dependent launch, as our pointwise kernels
// are) and loads its block's share of the constant weights before it waits
// for the grid ahead of it.
//
// cuBLAS's kernels cannot be launched early, so every pointwise-kernel ->
// GEMM edge of a step pays a full launch and the GEMM then streams its
// weights from L2. The GRU with the reset gate before the matmul has two such
// edges per step, the LSTM one. Each GEMM here writes S partials [M, N] over
// K slices that the step's kernel adds, as for rnn_cuda_gemm_partials:
//  pgemm  a block per (N tile of NT, K slice) stages its weight tile in
//         shared memory with cp.async (before or after the wait), then A's
//         slice, and multiplies with mma.sync m16n8k8 (weights read from
//         shared memory at every k-step);
//  rgemm  a block per (64 columns, K slice of 128): each warp holds its 16
//         columns' weights in registers (A operand of the mma), A's slice in
//         shared memory (float4 fragments, K permuted within k-step pairs);
//  runtime  lib/Runtime/Cuda/PreloadedPartialsGemm.cu as built (included);
//  bisect<...>  rgemm with the runtime kernel's differences one at a time
//         (dynamic shared memory, bounds-checked weight loads, a row-tile
//         count from m that skips tiles with a branch, bounds-checked stores);
//  rt2<...>  ("runtime copy") the runtime kernel copied, with four of its
//         remaining differences from rgemm switchable (32-bit indices, A's
//         rows unclamped, weight rows unclamped, group offset constant 0).
// "pf1"/"pf2": the first or the second GRU kernel also prefetches the next
// step's projection row into L2 (before its wait: a prefetch writes nothing).
// The pointwise kernels let the next grid launch before their own wait
// ("first") or after it ("after", as rnn-compile's kernels did then).
// Every variant: T = 100 steps in a CUDA graph, µs per step (median of 20
// replays, three rounds), h after 100 steps against the cuBLAS form.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/preload_gemm.cu -lcublas -o build/exp/preload_gemm
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <type_traits>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
constexpr int B = 64, H = 1024, T = 100;
__global__ void fill(float *p, size_t n, float s, unsigned seed) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * ((((i + seed) * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ void gridWait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void letNextLaunch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ unsigned smemAddr(const void *p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void copy16(void *dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smemAddr(dst)), "l"(src)); }
__device__ __forceinline__ unsigned tf32(float x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }

// P[slice][m, n0 + j] = sum over k in the slice of A[m, k] W[n0 + j, k], M = 64.
// Block: 4 warps, warp w owns rows 16w..16w+15 and all NT columns.
template <int NT>
__global__ void __launch_bounds__(128) pgemm(const float *a, int lda, const float *w, int ldw, float *p, int n, int ks, int preload) {
  extern __shared__ float smem[];
  const int stride = ks + 4;  // rows padded by 4 floats: fragment reads hit 32 banks
  float *ws = smem, *as = smem + NT * stride;
  const int n0 = blockIdx.x * NT, k0 = blockIdx.y * ks, tid = threadIdx.x, chunks = ks / 4;
  auto stageW = [&] { for (int c = tid; c < NT * chunks; c += 128) { int r = c / chunks, v = c % chunks; copy16(ws + r * stride + 4 * v, w + (size_t)(n0 + r) * ldw + k0 + 4 * v); }
                      asm volatile("cp.async.commit_group;" ::: "memory"); };
  if (preload) stageW();
  gridWait();
  letNextLaunch();
  if (!preload) stageW();
  for (int c = tid; c < 64 * chunks; c += 128) { int r = c / chunks, v = c % chunks; copy16(as + r * stride + 4 * v, a + (size_t)r * lda + k0 + 4 * v); }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  float acc[NT / 8][4] = {};
  const float *ar = as + (16 * warp + g) * stride;
  for (int kk = 0; kk < ks; kk += 8) {
    unsigned a0 = tf32(ar[kk + t]), a1 = tf32(ar[8 * stride + kk + t]), a2 = tf32(ar[kk + t + 4]), a3 = tf32(ar[8 * stride + kk + t + 4]);
#pragma unroll
    for (int j = 0; j < NT / 8; ++j) {
      const float *wr = ws + (8 * j + g) * stride + kk;
      unsigned b0 = tf32(wr[t]), b1 = tf32(wr[t + 4]);
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  float *out = p + (size_t)blockIdx.y * 64 * n + (size_t)(16 * warp + g) * n + n0;
#pragma unroll
  for (int j = 0; j < NT / 8; ++j) {
    *reinterpret_cast<float2 *>(out + 8 * j + 2 * t) = make_float2(acc[j][0], acc[j][1]);
    *reinterpret_cast<float2 *>(out + 8 * n + 8 * j + 2 * t) = make_float2(acc[j][2], acc[j][3]);
  }
}

// The same product with the block's weights in registers: warp w of a block
// owns the 16 output columns n0 + 16w .. n0 + 16w + 15 over the block's K
// slice (128), as the A operand of mma m16n8k8 (rows = output columns), loaded
// and rounded to TF32 before the wait; h's slice (the B operand, columns =
// batch rows) is staged in shared memory after it. K is permuted inside each
// pair of k-steps (lane t takes k = 4t .. 4t + 3) so that A and B fragments
// are float4 loads; the sum is the same.
__global__ void __launch_bounds__(128) rgemm(const float *a, int lda, const float *w, int ldw, float *p, int n, int preload) {
  constexpr int ks = 128, stride = ks + 16;  // +16: a float4 phase (2 rows) covers 32 banks
  __shared__ __align__(16) float as[64 * stride];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * 64 + 16 * warp, k0 = blockIdx.y * ks;
  unsigned wr[ks / 16][8];
  auto loadW = [&] {
#pragma unroll
    for (int q = 0; q < ks / 16; ++q) {
      float4 lo = *reinterpret_cast<const float4 *>(w + (size_t)(n0 + g) * ldw + k0 + 16 * q + 4 * t);
      float4 hi = *reinterpret_cast<const float4 *>(w + (size_t)(n0 + g + 8) * ldw + k0 + 16 * q + 4 * t);
      wr[q][0] = tf32(lo.x); wr[q][1] = tf32(hi.x); wr[q][2] = tf32(lo.y); wr[q][3] = tf32(hi.y);
      wr[q][4] = tf32(lo.z); wr[q][5] = tf32(hi.z); wr[q][6] = tf32(lo.w); wr[q][7] = tf32(hi.w);
    } };
  if (preload) loadW();
  gridWait();
  letNextLaunch();
  for (int c = tid; c < 64 * ks / 4; c += 128) { int r = c / (ks / 4), v = c % (ks / 4); copy16(as + r * stride + 4 * v, a + (size_t)r * lda + k0 + 4 * v); }
  asm volatile("cp.async.commit_group;" ::: "memory");
  if (!preload) loadW();
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  float acc[8][4] = {};
#pragma unroll
  for (int q = 0; q < ks / 16; ++q) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float4 bv = *reinterpret_cast<const float4 *>(as + (8 * j + g) * stride + 16 * q + 4 * t);
      unsigned b0 = tf32(bv.x), b1 = tf32(bv.y), b2 = tf32(bv.z), b3 = tf32(bv.w);
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(wr[q][0]), "r"(wr[q][1]), "r"(wr[q][2]), "r"(wr[q][3]), "r"(b0), "r"(b1));
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(wr[q][4]), "r"(wr[q][5]), "r"(wr[q][6]), "r"(wr[q][7]), "r"(b2), "r"(b3));
    }
  }
  // acc[j]: (column n0 + g, rows 8j + 2t, 8j + 2t + 1), (column n0 + g + 8, the same rows).
  float *out = p + (size_t)blockIdx.y * 64 * n + n0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int r = 8 * j + 2 * t;
    out[(size_t)r * n + g] = acc[j][0]; out[(size_t)(r + 1) * n + g] = acc[j][1];
    out[(size_t)r * n + g + 8] = acc[j][2]; out[(size_t)(r + 1) * n + g + 8] = acc[j][3];
  }
}

// Bisect between rgemm and the runtime's kernel: the runtime kernel's
// features one at a time (dynamic shared memory, bounds-checked weight loads,
// a row-tile count from m, bounds-checked stores).
template <bool kDyn, bool kPredLoad, bool kTiles, bool kPredStore>
__global__ void __launch_bounds__(128) bisect(const float *a, int64_t lda, const float *w, int64_t ldw, float *p, int64_t ldc, int m, int n) {
  constexpr int ks = 128, stride = ks + 16;
  __shared__ __align__(16) float fixed[kDyn ? 4 : 64 * stride];
  extern __shared__ float4 dyn4[];
  float *as = kDyn ? reinterpret_cast<float *>(dyn4) : fixed;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * 64 + 16 * warp; const int64_t k0 = (int64_t)blockIdx.y * ks;
  unsigned wr[ks / 16][8];
  const int rowLo = n0 + g, rowHi = n0 + g + 8;
#pragma unroll
  for (int q = 0; q < ks / 16; ++q) {
    float4 lo, hi;
    if (kPredLoad) {
      lo = rowLo < n ? *reinterpret_cast<const float4 *>(w + (int64_t)rowLo * ldw + k0 + 16 * q + 4 * t) : make_float4(0, 0, 0, 0);
      hi = rowHi < n ? *reinterpret_cast<const float4 *>(w + (int64_t)rowHi * ldw + k0 + 16 * q + 4 * t) : make_float4(0, 0, 0, 0);
    } else {
      lo = *reinterpret_cast<const float4 *>(w + (int64_t)rowLo * ldw + k0 + 16 * q + 4 * t);
      hi = *reinterpret_cast<const float4 *>(w + (int64_t)rowHi * ldw + k0 + 16 * q + 4 * t);
    }
    wr[q][0] = tf32(lo.x); wr[q][1] = tf32(hi.x); wr[q][2] = tf32(lo.y); wr[q][3] = tf32(hi.y);
    wr[q][4] = tf32(lo.z); wr[q][5] = tf32(hi.z); wr[q][6] = tf32(lo.w); wr[q][7] = tf32(hi.w);
  }
  gridWait();
  letNextLaunch();
  for (int c = tid; c < 64 * ks / 4; c += 128) { int r = c / (ks / 4), v = c % (ks / 4);
    if (r < m) copy16(as + r * stride + 4 * v, a + (int64_t)r * lda + k0 + 4 * v);
    else *reinterpret_cast<float4 *>(as + r * stride + 4 * v) = make_float4(0, 0, 0, 0); }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  const int tiles = kTiles ? (m + 7) / 8 : 8;
  float acc[8][4] = {};
#pragma unroll
  for (int q = 0; q < ks / 16; ++q) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (kTiles && j >= tiles) break;
      float4 bv = *reinterpret_cast<const float4 *>(as + (8 * j + g) * stride + 16 * q + 4 * t);
      unsigned b0 = tf32(bv.x), b1 = tf32(bv.y), b2 = tf32(bv.z), b3 = tf32(bv.w);
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(wr[q][0]), "r"(wr[q][1]), "r"(wr[q][2]), "r"(wr[q][3]), "r"(b0), "r"(b1));
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(wr[q][4]), "r"(wr[q][5]), "r"(wr[q][6]), "r"(wr[q][7]), "r"(b2), "r"(b3));
    }
  }
  float *out = p + (int64_t)blockIdx.y * m * ldc;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int r = 8 * j + 2 * t;
    if (kPredStore) {
      float values[4] = {acc[j][0], acc[j][1], acc[j][2], acc[j][3]};
      int rows[4] = {r, r + 1, r, r + 1}, cols[4] = {rowLo, rowLo, rowHi, rowHi};
#pragma unroll
      for (int e = 0; e < 4; ++e) if (rows[e] < m && cols[e] < n) out[(int64_t)rows[e] * ldc + cols[e]] = values[e];
    } else {
      out[(int64_t)r * ldc + rowLo] = acc[j][0]; out[(int64_t)(r + 1) * ldc + rowLo] = acc[j][1];
      out[(int64_t)r * ldc + rowHi] = acc[j][2]; out[(int64_t)(r + 1) * ldc + rowHi] = acc[j][3];
    }
  }
}

// The runtime kernel (slice 128) with what still tells it from rgemm
// changed one at a time: 32-bit index arithmetic, no clamping of A's rows,
// no clamping of the weight rows, the warp group's K offset a constant 0.
template <bool k32, bool kNoClampA, bool kNoClampW, bool kGroup0>
__global__ void __launch_bounds__(128) rt2(const float *a, int64_t lda64, const float *w, int64_t ldw64, float *c, int64_t ldc64, int m, int n) {
  using Index = typename std::conditional<k32, int, int64_t>::type;
  const Index lda = (Index)lda64, ldw = (Index)ldw64, ldc = (Index)ldc64;
  constexpr int kSlice = 128, kStride = kSlice + 16;
  extern __shared__ float4 shared4[];
  float *staged = reinterpret_cast<float *>(shared4);
  const int tid = threadIdx.x, group = kGroup0 ? 0 : tid / 128, warp = tid % 128 / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int n0 = blockIdx.x * 64 + 16 * warp;
  const Index k0 = static_cast<Index>(blockIdx.y) * kSlice;
  const int kGroup = 128 * group;
  unsigned weights[8][8];
  {
    const float *lo = w + static_cast<Index>(kNoClampW ? n0 + g : min(n0 + g, n - 1)) * ldw + k0 + kGroup;
    const float *hi = w + static_cast<Index>(kNoClampW ? n0 + g + 8 : min(n0 + g + 8, n - 1)) * ldw + k0 + kGroup;
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      float4 vl = *reinterpret_cast<const float4 *>(lo + 16 * p + 4 * t);
      float4 vh = *reinterpret_cast<const float4 *>(hi + 16 * p + 4 * t);
      weights[p][0] = tf32(vl.x); weights[p][1] = tf32(vh.x); weights[p][2] = tf32(vl.y); weights[p][3] = tf32(vh.y);
      weights[p][4] = tf32(vl.z); weights[p][5] = tf32(vh.z); weights[p][6] = tf32(vl.w); weights[p][7] = tf32(vh.w);
    }
  }
  gridWait();
  letNextLaunch();
  for (int v = tid; v < 64 * 32; v += 128) {
    int row = v / 32, col = 4 * (v % 32);
    const float *src = a + static_cast<Index>(kNoClampA ? row : min(row, m - 1)) * lda + k0 + col;
    copy16(staged + row * kStride + col, src);
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  float acc[8][4] = {};
#pragma unroll
  for (int p = 0; p < 8; ++p) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float4 x = *reinterpret_cast<const float4 *>(staged + (8 * j + g) * kStride + kGroup + 16 * p + 4 * t);
      unsigned b0 = tf32(x.x), b1 = tf32(x.y), b2 = tf32(x.z), b3 = tf32(x.w);
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(weights[p][0]), "r"(weights[p][1]), "r"(weights[p][2]), "r"(weights[p][3]), "r"(b0), "r"(b1));
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                   : "r"(weights[p][4]), "r"(weights[p][5]), "r"(weights[p][6]), "r"(weights[p][7]), "r"(b2), "r"(b3));
    }
  }
  float *out = c + static_cast<Index>(blockIdx.y) * m * ldc;
  const int colLo = n0 + g, colHi = n0 + g + 8;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    int row = 8 * j + 2 * t;
    float values[4] = {acc[j][0], acc[j][1], acc[j][2], acc[j][3]};
    int rows[4] = {row, row + 1, row, row + 1}, cols[4] = {colLo, colLo, colHi, colHi};
#pragma unroll
    for (int e = 0; e < 4; ++e) if (rows[e] < m && cols[e] < n) out[static_cast<Index>(rows[e]) * ldc + cols[e]] = values[e];
  }
}

// Pointwise kernels: the partials' sum plus the projection (biases folded in).
// Each lets the next grid (our GEMM) launch, so that it stages its weights
// while this one runs: before it waits for the grid ahead (`first`), or after
// (as rnn-compile's kernels do).
// With `row` (the next step's input projection, [B, 3H]), the thread's three
// values of it into L2 first: a prefetch changes no memory, so it may come
// before the wait.
__device__ __forceinline__ void prefetchRow(const float *row) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (!row || i >= B * H) return;
  int b = i / H, j = i % H;
  for (int q = 0; q < 3; ++q) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + b * 3 * H + q * H + j));
}
__device__ __forceinline__ void triggerAndWait(int first) {
  if (first) letNextLaunch();
  gridWait();
  if (!first) letNextLaunch();
}
// x: [T, B, 3H] (r, z, n) for the GRU, [T, B, 4H] for the LSTM.
__global__ void gru1(int first, const float *p, int s1, const float *x, const float *h, float *rh, float *z, const float *xnext = nullptr) {
  prefetchRow(xnext); triggerAndWait(first); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sr = x[b * 3 * H + j], sz = x[b * 3 * H + H + j];
  for (int s = 0; s < s1; ++s) { sr += p[(size_t)s * B * 2 * H + b * 2 * H + j]; sz += p[(size_t)s * B * 2 * H + b * 2 * H + H + j]; }
  rh[i] = sig(sr) * h[i]; z[i] = sig(sz);
}
__global__ void gru2(int first, const float *p, int s2, const float *x, const float *z, float *h, const float *xnext = nullptr) {
  prefetchRow(xnext); triggerAndWait(first); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; float sn = x[b * 3 * H + 2 * H + j];
  for (int s = 0; s < s2; ++s) sn += p[(size_t)s * B * H + i];
  float nn = tanhf(sn); h[i] = (1 - z[i]) * nn + z[i] * h[i];
}
__global__ void lstm(int first, const float *g, int sl, const float *x, float *c, float *h) {
  triggerAndWait(first); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int b = i / H, j = i % H; const float *xb = x + (size_t)b * 4 * H; float v[4];
  for (int q = 0; q < 4; ++q) { v[q] = xb[q * H + j]; for (int s = 0; s < sl; ++s) v[q] += g[(size_t)s * B * 4 * H + (size_t)b * 4 * H + q * H + j]; }
  float cn = sig(v[1]) * c[i] + sig(v[0]) * tanhf(v[2]); c[i] = cn; h[i] = sig(v[3]) * tanhf(cn);
}

int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  void *wsp; CK(cudaMalloc(&wsp, 32 << 20)); CK(cublasSetWorkspace(hd, wsp, 32 << 20));
  float *U, *UL, *X, *XL, *P1, *P2, *G, *h0, *rh, *z, *c;
  float *hG[25], *hL[4];
  CK(cudaMalloc(&U, 4 * 3 * H * H)); CK(cudaMalloc(&UL, 4 * 4 * H * H));  // rows U_r, U_z, U_n / the LSTM's 4H rows
  CK(cudaMalloc(&X, 4 * (size_t)T * B * 3 * H)); CK(cudaMalloc(&XL, 4 * (size_t)T * B * 4 * H));
  CK(cudaMalloc(&P1, 4 * 8 * B * 2 * H)); CK(cudaMalloc(&P2, 4 * 8 * B * H)); CK(cudaMalloc(&G, 4 * 8 * B * 4 * H));
  CK(cudaMalloc(&h0, 4 * B * H)); CK(cudaMalloc(&rh, 4 * B * H)); CK(cudaMalloc(&z, 4 * B * H)); CK(cudaMalloc(&c, 4 * B * H));
  for (int v = 0; v < 25; ++v) { CK(cudaMalloc(&hG[v], 4 * B * H)); if (v < 4) CK(cudaMalloc(&hL[v], 4 * B * H)); }
  fill<<<3 * H * H / 256, 256>>>(U, 3 * H * H, 0.06f, 1); fill<<<T * B * 3 * H / 256, 256>>>(X, (size_t)T * B * 3 * H, 2.f, 2);
  fill<<<4 * H * H / 256, 256>>>(UL, 4 * H * H, 0.06f, 4); fill<<<T * B * 4 * H / 256, 256>>>(XL, (size_t)T * B * 4 * H, 2.f, 5);
  fill<<<B * H / 256, 256>>>(h0, B * H, 1.f, 3);
  CK(cudaDeviceSynchronize());
  auto smemOf = [](int nt, int ks) { return (nt + 64) * (ks + 4) * 4; };
  CK(cudaFuncSetAttribute(pgemm<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, smemOf(64, 256)));
  CK(cudaFuncSetAttribute(rnn_preloaded_partials_gemm_slice256, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 272 * 4));
  CK(cudaFuncSetAttribute(pgemm<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, smemOf(128, 256)));
  float one = 1, zero = 0; const int Gr = B * H / 256;
  auto cublasPartials = [&](const float *W, const float *A, int n, int slices, float *C) {
    CK(cublasGemmStridedBatchedEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, n, B, H / slices, &one, W, CUDA_R_32F, H, H / slices, A, CUDA_R_32F, H,
                                  H / slices, &zero, C, CUDA_R_32F, n, (long long)B * n, slices, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)); };
  auto early = [&](dim3 grid, dim3 block, size_t smem, auto kernel, auto... args) {
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = block; cfg.dynamicSmemBytes = smem; cfg.stream = s;
    cudaLaunchAttribute at; at.id = cudaLaunchAttributeProgrammaticStreamSerialization; at.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &at; cfg.numAttrs = 1; CK(cudaLaunchKernelEx(&cfg, kernel, args...)); };
  // Our product: NT, slices, weights staged before the wait or after it.
  int triggerFirst = 1;
  int prefetchIn = 0;  // Which GRU kernel prefetches the next step's projection row (0: none).
  struct Ours { int nt, slices, preload; };  // nt: 64/128 pgemm, 0 rgemm, -1 the runtime kernel, 100 + bits bisect
  auto ours = [&](Ours o, const float *W, const float *A, int n, float *C) {
    if (o.nt < 0) {  // The runtime's kernel (PreloadedPartialsGemm.cu): slices of 128 or 256.
      int64_t ld = H, ldc = n; int m = B; const float *a_ = A, *w_ = W; float *c_ = C;
      if (o.slices == 8) early(dim3(n / 64, 8), 128, 64 * 144 * 4, rnn_preloaded_partials_gemm_slice128, a_, ld, w_, ld, c_, ldc, m, n);
      else early(dim3(n / 64, 4), 256, 64 * 272 * 4, rnn_preloaded_partials_gemm_slice256, a_, ld, w_, ld, c_, ldc, m, n);
      return; }
    if (o.nt >= 200) {  // rt2<...>: nt = 200 + bits (1 32-bit, 2 no A clamp, 4 no W clamp, 8 group 0)
      int64_t ld = H, ldc = n; int m = B; const float *a_ = A, *w_ = W; float *c_ = C; dim3 grid(n / 64, 8); size_t sm = 64 * 144 * 4;
      switch (o.nt - 200) {
      case 0: early(grid, 128, sm, rt2<false, false, false, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 1: early(grid, 128, sm, rt2<true, false, false, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 2: early(grid, 128, sm, rt2<false, true, false, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 4: early(grid, 128, sm, rt2<false, false, true, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 8: early(grid, 128, sm, rt2<false, false, false, true>, a_, ld, w_, ld, c_, ldc, m, n); break;
      default: early(grid, 128, sm, rt2<true, true, true, true>, a_, ld, w_, ld, c_, ldc, m, n); break;
      }
      return; }
    if (o.nt >= 100) {  // bisect<...>: nt = 100 + bits (1 dyn, 2 pred load, 4 tiles, 8 pred store)
      int64_t ld = H, ldc = n; int m = B; const float *a_ = A, *w_ = W; float *c_ = C; dim3 grid(n / 64, 8); size_t sm = 64 * 144 * 4;
      switch (o.nt - 100) {
      case 0: early(grid, 128, 0, bisect<false, false, false, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 1: early(grid, 128, sm, bisect<true, false, false, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 2: early(grid, 128, 0, bisect<false, true, false, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 4: early(grid, 128, 0, bisect<false, false, true, false>, a_, ld, w_, ld, c_, ldc, m, n); break;
      case 8: early(grid, 128, 0, bisect<false, false, false, true>, a_, ld, w_, ld, c_, ldc, m, n); break;
      default: early(grid, 128, sm, bisect<true, true, true, true>, a_, ld, w_, ld, c_, ldc, m, n); break;
      }
      return; }
    if (o.nt == 0) { early(dim3(n / 64, 8), 128, 0, rgemm, A, H, W, H, C, n, o.preload); return; }
    int ks = H / o.slices; dim3 grid(n / o.nt, o.slices);
    if (o.nt == 64) early(grid, 128, smemOf(64, ks), pgemm<64>, A, H, W, H, C, n, ks, o.preload);
    else early(grid, 128, smemOf(128, ks), pgemm<128>, A, H, W, H, C, n, ks, o.preload); };
  // GRU step: first product (N = 2H) in s1 slices, second (N = H) in s2.
  auto gruSteps = [&](float *h, bool cublas, Ours o1, Ours o2) { CK(cudaMemcpyAsync(h, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    int s1 = cublas ? 4 : o1.slices, s2 = 8;
    for (int t = 0; t < T; ++t) { const float *x = X + (size_t)t * B * 3 * H;
      if (cublas) cublasPartials(U, h, 2 * H, 4, P1); else ours(o1, U, h, 2 * H, P1);
      const float *xnext = t + 1 < T ? x + B * 3 * H : nullptr;
      early(Gr, 256, 0, gru1, triggerFirst, (const float *)P1, s1, x, (const float *)h, rh, z, prefetchIn == 1 ? xnext : nullptr);
      if (cublas) cublasPartials(U + (size_t)2 * H * H, rh, H, 8, P2); else { s2 = o2.slices; ours(o2, U + (size_t)2 * H * H, rh, H, P2); }
      early(Gr, 256, 0, gru2, triggerFirst, (const float *)P2, s2, x, (const float *)z, h, prefetchIn == 2 ? xnext : nullptr); } };
  auto lstmSteps = [&](float *h, bool cublas, Ours o) { CK(cudaMemcpyAsync(h, h0, 4 * B * H, cudaMemcpyDeviceToDevice, s)); CK(cudaMemsetAsync(c, 0, 4 * B * H, s));
    for (int t = 0; t < T; ++t) { const float *x = XL + (size_t)t * B * 4 * H;
      if (cublas) CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, 4 * H, B, H, &one, UL, CUDA_R_32F, H, h, CUDA_R_32F, H, &zero, G, CUDA_R_32F, 4 * H,
                                  CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      else ours(o, UL, h, 4 * H, G);
      early(Gr, 256, 0, lstm, triggerFirst, (const float *)G, cublas ? 1 : o.slices, x, c, h); } };
  auto graphOf = [&](std::function<void()> steps) { steps(); CK(cudaStreamSynchronize(s)); cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); steps(); CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0)); cudaGraphDestroy(g); CK(cudaGraphUpload(ge, s)); return ge; };
  struct Variant { const char *name; cudaGraphExec_t graph; float *h; };
  std::vector<Variant> vs;
  auto withTrigger = [&](int first, std::function<void()> steps) { return [&, first, steps] { triggerFirst = first; steps(); }; };
  vs.push_back({"LSTM cuBLAS", graphOf(withTrigger(0, [&] { lstmSteps(hL[0], true, {}); })), hL[0]});
  vs.push_back({"LSTM pgemm NT128 S8, first", graphOf(withTrigger(1, [&] { lstmSteps(hL[1], false, {128, 8, 1}); })), hL[1]});
  vs.push_back({"LSTM rgemm S8, first", graphOf(withTrigger(1, [&] { lstmSteps(hL[2], false, {0, 8, 1}); })), hL[2]});
  vs.push_back({"LSTM rgemm S8, after", graphOf(withTrigger(0, [&] { lstmSteps(hL[3], false, {0, 8, 1}); })), hL[3]});
  vs.push_back({"GRU-rb cuBLAS", graphOf(withTrigger(0, [&] { gruSteps(hG[0], true, {}, {}); })), hG[0]});
  vs.push_back({"GRU-rb pgemm 8/8, first", graphOf(withTrigger(1, [&] { gruSteps(hG[1], false, {64, 8, 1}, {64, 8, 1}); })), hG[1]});
  vs.push_back({"GRU-rb pgemm 8/8 w. after wait", graphOf(withTrigger(1, [&] { gruSteps(hG[2], false, {64, 8, 0}, {64, 8, 0}); })), hG[2]});
  vs.push_back({"GRU-rb rgemm 8/8, first", graphOf(withTrigger(1, [&] { gruSteps(hG[3], false, {0, 8, 1}, {0, 8, 1}); })), hG[3]});
  vs.push_back({"GRU-rb rgemm 8/8 w. after wait", graphOf(withTrigger(1, [&] { gruSteps(hG[4], false, {0, 8, 0}, {0, 8, 0}); })), hG[4]});
  vs.push_back({"GRU-rb rgemm 8/8, after", graphOf(withTrigger(0, [&] { gruSteps(hG[5], false, {0, 8, 1}, {0, 8, 1}); })), hG[5]});
  vs.push_back({"GRU-rb runtime 8/8, first", graphOf(withTrigger(1, [&] { gruSteps(hG[6], false, {-1, 8, 1}, {-1, 8, 1}); })), hG[6]});
  vs.push_back({"GRU-rb runtime 4/8, first", graphOf(withTrigger(1, [&] { gruSteps(hG[7], false, {-1, 4, 1}, {-1, 8, 1}); })), hG[7]});
  vs.push_back({"GRU-rb runtime 8/8, after", graphOf(withTrigger(0, [&] { gruSteps(hG[8], false, {-1, 8, 1}, {-1, 8, 1}); })), hG[8]});
  vs.push_back({"GRU-rb runtime 4/8, after", graphOf(withTrigger(0, [&] { gruSteps(hG[9], false, {-1, 4, 1}, {-1, 8, 1}); })), hG[9]});
  auto withPrefetch = [&](int kernel, std::function<void()> steps) { return [&, kernel, steps] { prefetchIn = kernel; steps(); prefetchIn = 0; }; };
  vs.push_back({"GRU-rb runtime 8/8, first, pf1", graphOf(withTrigger(1, withPrefetch(1, [&] { gruSteps(hG[16], false, {-1, 8, 1}, {-1, 8, 1}); }))), hG[16]});
  vs.push_back({"GRU-rb runtime 8/8, first, pf2", graphOf(withTrigger(1, withPrefetch(2, [&] { gruSteps(hG[17], false, {-1, 8, 1}, {-1, 8, 1}); }))), hG[17]});
  vs.push_back({"GRU-rb cuBLAS, pf2", graphOf(withTrigger(0, withPrefetch(2, [&] { gruSteps(hG[18], true, {}, {}); }))), hG[18]});
  const int bisectBits[] = {0, 1, 2, 4, 8, 15};
  const char *rt2Names[] = {"runtime copy", "runtime copy, 32-bit", "runtime copy, A unclamped", "runtime copy, W unclamped", "runtime copy, group 0", "runtime copy, all four"};
  for (int v = 0; v < 6; ++v)
    vs.push_back({rt2Names[v], graphOf(withTrigger(1, [&, v] { gruSteps(hG[19 + v], false, {200 + bisectBits[v], 8, 1}, {200 + bisectBits[v], 8, 1}); })), hG[19 + v]});
  const char *bisectNames[] = {"bisect none", "bisect dynamic smem", "bisect checked loads", "bisect tiles from m", "bisect checked stores", "bisect all four"};
  for (int v = 0; v < 6; ++v)
    vs.push_back({bisectNames[v], graphOf(withTrigger(1, [&, v] { gruSteps(hG[10 + v], false, {100 + bisectBits[v], 8, 1}, {100 + bisectBits[v], 8, 1}); })), hG[10 + v]});
  auto time = [&](cudaGraphExec_t ge) { cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
    for (int r = 0; r < 25; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
    std::sort(ts.begin(), ts.end()); return 1000 * ts[ts.size() / 2] / T; };
  for (int round = 0; round < 3; ++round) {
    std::vector<float> us; for (auto &v : vs) us.push_back(time(v.graph));
    printf("round %d:\n", round);
    for (size_t k = 0; k < vs.size(); ++k) printf("  %-30s %6.2f us/step  %.2fx LSTM cuBLAS\n", vs[k].name, us[k], us[k] / us[0]);
  }
  auto diff = [&](float *ref, float *got) { std::vector<float> a(B * H), f(B * H);
    CK(cudaMemcpy(a.data(), ref, 4 * B * H, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(f.data(), got, 4 * B * H, cudaMemcpyDeviceToHost));
    double num = 0, den = 0; for (int i = 0; i < B * H; ++i) { num = std::max(num, (double)std::fabs(a[i] - f[i])); den = std::max(den, (double)std::fabs(a[i])); }
    return std::make_pair(num, den); };
  for (auto &v : vs) CK(cudaGraphLaunch(v.graph, s));
  CK(cudaStreamSynchronize(s));
  for (size_t k = 0; k < vs.size(); ++k) { bool gru = k >= 4; auto d = diff(gru ? hG[0] : hL[0], vs[k].h);
    printf("%-30s against cuBLAS after %d steps: max abs diff %.2e (max |h| %.2e)\n", vs[k].name, T, d.first, d.second); }
  return 0;
}
