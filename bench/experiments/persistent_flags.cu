// Experiment: the MGU recurrence at `medium` (T 100, B 64, H 1024, fp32
// storage, TF32 products) as one persistent kernel, weights in shared
// memory, like persistent_two_stage.cu, but with the grid-wide barrier
// between phases replaced by point-to-point readiness counters.
//
// 128 blocks stay resident: block (c, r) owns columns 64c..64c+63 and the K
// slice 128r..128r+127 of U_f and U_h; per phase it stages its slice of A
// (h, then f*h) with cp.async, multiplies with mma.sync, the 8 blocks of a
// column range (a cluster) add their partial products through distributed
// shared memory, and rank r applies the pointwise stage to rows 8r..8r+7.
// A block's next phase needs only the outputs of the column ranges that
// cover its K slice (2 of 16 clusters): each block publishes its rows with
// a release increment on its column range's counter and waits with acquire
// loads on the counters it reads. h is kept per step (the output sequence)
// and A = f*h double-buffered by step, so no block overwrites what a slower
// one still reads. The partial products share the space of the A slice; a
// cluster barrier split into arrive (after the peers' partials are read)
// and wait (before the next A slice is staged) protects them. The input
// projections are loaded before the waits and h stays in registers (each
// thread computes the same elements every step). Compared in one process
// with the cuBLAS path (GEMM + split-K reduction + pointwise kernel, twice
// per step) and with the LSTM's step, all in CUDA graphs; the results are
// checked against the cuBLAS path.
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
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }

constexpr int T = 100, B = 64, H = 1024, kThreads = 256;
/// Block (c, r) owns kCols columns and the K slice r of H / kSplit; a cluster is the kSplit blocks of a column range.
template <int kCols, int kSplit> struct Tiling {
  static constexpr int kSlice = H / kSplit, kStride = kSlice + 4, kBlocksX = H / kCols, kBlocks = kBlocksX * kSplit;
  // U_f and U_h slices, then the A slice, whose space takes the partial product once the product is done.
  static constexpr int kPartialOffset = 2 * kCols * kStride;
  static_assert(B * kCols <= B * kStride, "the partial product must fit in the A slice's space");
  static constexpr int kSharedFloats = (2 * kCols + B) * kStride;
  static constexpr int kRangesPerSlice = kSlice / kCols; // column ranges (clusters) whose outputs a K slice reads
};

__device__ __forceinline__ uint32_t tf32Bits(float x) { uint32_t r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ uint32_t sharedAddress(const void *p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }

__device__ __forceinline__ uint64_t nowNs() { uint64_t t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
/// This block's partial product of A[:, slice] and W[cols, slice]ᵀ into `partial` [B][kCols].
template <int kCols, int kSplit>
__device__ void partialProduct(const float *a, const float *as, const float *ws, float *partial, uint64_t &loadNs, int bulk, uint64_t *barrier, uint32_t &parity) {
  // a: global A [B, H]; as: shared A slice; ws: shared weight slice [kCols][kStride].
  using Tile = Tiling<kCols, kSplit>;
  constexpr int kSlice = Tile::kSlice, kStride = Tile::kStride, kTiles = kCols / 16; // n-tiles per warp
  const int rank = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint64_t start;
  if (bulk) {
    // One bulk copy (TMA) per row of the slice, issued by warp 0, completing on an mbarrier.
    if (warp == 0) {
      asm volatile("fence.proxy.async.shared::cta;\nfence.proxy.async.global;\n" ::: "memory");
      if (lane == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sharedAddress(barrier)), "r"(B * kSlice * 4) : "memory");
      __syncwarp();
      for (int row = lane; row < B; row += 32)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(sharedAddress(as + row * kStride)),
                     "l"(a + row * H + rank * kSlice), "r"(kSlice * 4), "r"(sharedAddress(barrier)) : "memory");
    }
    start = nowNs();
    asm volatile("{\n.reg .pred done;\nwait_%=:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra wait_%=;\n}\n" ::"r"(sharedAddress(barrier)), "r"(parity) : "memory");
    parity ^= 1;
  } else {
    for (int i = threadIdx.x; i < B * (kSlice / 4); i += kThreads) {
      int row = i / (kSlice / 4), v = (i % (kSlice / 4)) * 4;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sharedAddress(as + row * kStride + v)), "l"(a + row * H + rank * kSlice + v));
    }
    start = nowNs();
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();
  }
  loadNs += nowNs() - start;
  const int mt = warp % 4, nh = warp / 4;
  float acc[kTiles][4] = {};
#pragma unroll 4
  for (int kk = 0; kk < kSlice; kk += 8) {
    const float *rows = as + mt * 16 * kStride + kk;
    uint32_t fragment[4] = {__float_as_uint(rows[g * kStride + t]), __float_as_uint(rows[(g + 8) * kStride + t]),
                            __float_as_uint(rows[g * kStride + t + 4]), __float_as_uint(rows[(g + 8) * kStride + t + 4])};
#pragma unroll
    for (int n = 0; n < kTiles; ++n) {
      const float *wr = ws + (nh * kCols / 2 + n * 8 + g) * kStride + kk;
      mma(acc[n], fragment, __float_as_uint(wr[t]), __float_as_uint(wr[t + 4]));
    }
  }
  __syncthreads(); // The A slice is read (its space may take the partial product).
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
    int col = nh * kCols / 2 + n * 8 + 2 * t, row = mt * 16 + g;
    partial[row * kCols + col] = acc[n][0]; partial[row * kCols + col + 1] = acc[n][1];
    partial[(row + 8) * kCols + col] = acc[n][2]; partial[(row + 8) * kCols + col + 1] = acc[n][3];
  }
}

/// Rank r's share of the cluster's sum: rows (B / kSplit) r.., element e = threadIdx.x + 256 i.
template <int kCols, int kSplit>
__device__ float clusterSum(cg::cluster_group &cluster, float *partial, int e) {
  int row = blockIdx.y * (B / kSplit) + e / kCols, col = e % kCols;
  float sum = 0;
#pragma unroll
  for (int q = 0; q < kSplit; ++q) sum += cluster.map_shared_rank(partial, q)[row * kCols + col];
  return sum;
}

// A cluster barrier split in halves: arrive (release) when done with the peers' shared memory, wait (acquire) before
// overwriting what the peers read.
__device__ __forceinline__ void clusterArrive() { asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void clusterWait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

/// Publishes this block's rows of a column range: every thread's stores, then one release increment.
__device__ void publish(unsigned *ready) {
  __syncthreads();
  // bar.sync orders the block's stores before thread 0's release (cumulative at GPU scope).
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(ready) : "memory");
}
/// Waits until `count` blocks have published each of the column ranges [first, first + n).
__device__ void awaitRanges(const unsigned *ready, int first, int n, unsigned count) {
  if (threadIdx.x < n) {
    unsigned seen;
    do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(ready + first + threadIdx.x) : "memory"); } while (seen < count);
  }
  __syncthreads();
}

// P1, P2: [T, B, H] input projections (with biases) of f and of the candidate.
// h0: the initial state; ys: [T, B, H] outputs, step t's h; a: two [B, H] buffers for f*h.
// readyA, readyH: per column range, how many blocks have published their rows of a / h.
template <int kCols, int kSplit>
__global__ void __launch_bounds__(kThreads) mguPersistent(const float *Uf, const float *Uh, const float *P1, const float *P2, const float *h0, float *a, float *ys, unsigned *readyA, unsigned *readyH, unsigned long long *segments, int bulk) {
  __shared__ uint64_t stagingBarrier;
  uint32_t parity = 0;
  if (threadIdx.x == 0)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\nfence.mbarrier_init.release.cluster;\n" ::"r"(sharedAddress(&stagingBarrier)) : "memory");
  extern __shared__ float4 shared4[];
  float *shared = reinterpret_cast<float *>(shared4);
  using Tile = Tiling<kCols, kSplit>;
  constexpr int kSlice = Tile::kSlice, kStride = Tile::kStride, kRanges = Tile::kRangesPerSlice;
  float *wf = shared, *wh = shared + kCols * kStride, *as = shared + 2 * kCols * kStride, *partial = shared + Tile::kPartialOffset;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = blockIdx.y, col0 = blockIdx.x * kCols;
  for (int i = threadIdx.x; i < kCols * kSlice; i += kThreads) {
    int c = i / kSlice, k = i % kSlice;
    wf[c * kStride + k] = __uint_as_float(tf32Bits(Uf[(int64_t)(col0 + c) * H + rank * kSlice + k]));
    wh[c * kStride + k] = __uint_as_float(tf32Bits(Uh[(int64_t)(col0 + c) * H + rank * kSlice + k]));
  }
  __syncthreads();
  clusterArrive(); // Pairs with the first phase's wait.
  constexpr int kPerThread = B / kSplit * kCols / kThreads; // 2
  // Where a phase's time goes (block 0, thread 0): waiting for A's producers, product, cluster sync, reduction and pointwise + publish.
  uint64_t mark = nowNs(), local[5] = {}, loadNs = 0;
  auto lap = [&](int i) { uint64_t n = nowNs(); local[i] += n - mark; mark = n; };
  // This thread's elements of h: it computes them itself at every step.
  float hv[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    int e = threadIdx.x + kThreads * i, row = rank * (B / kSplit) + e / kCols, j = col0 + e % kCols;
    hv[i] = h0[row * H + j];
  }
  for (int t = 0; t < T; ++t) {
    float f[kPerThread];
    const float *hPrev = t == 0 ? h0 : ys + (int64_t)(t - 1) * B * H;
    float *at = a + (t % 2) * B * H;
    // The input projections do not depend on the recurrence: load them before waiting.
    float p1[kPerThread], p2[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int e = threadIdx.x + kThreads * i, row = rank * (B / kSplit) + e / kCols, j = col0 + e % kCols;
      p1[i] = P1[((int64_t)t * B + row) * H + j];
      p2[i] = P2[((int64_t)t * B + row) * H + j];
    }
    if (t > 0) awaitRanges(readyH, rank * kRanges, kRanges, kSplit * t);
    clusterWait();
    lap(0);
    partialProduct<kCols, kSplit>(hPrev, as, wf, partial, loadNs, bulk, &stagingBarrier, parity);
    lap(1);
    clusterArrive();
    clusterWait();
    lap(2);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int e = threadIdx.x + kThreads * i, row = rank * (B / kSplit) + e / kCols, j = col0 + e % kCols;
      float s = clusterSum<kCols, kSplit>(cluster, partial, e);
      f[i] = sig(s + p1[i]);
      at[row * H + j] = f[i] * hv[i];
    }
    clusterArrive();
    publish(readyA + blockIdx.x);
    lap(3);
    awaitRanges(readyA, rank * kRanges, kRanges, kSplit * (t + 1));
    clusterWait();
    lap(0);
    partialProduct<kCols, kSplit>(at, as, wh, partial, loadNs, bulk, &stagingBarrier, parity);
    lap(1);
    clusterArrive();
    clusterWait();
    lap(2);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int e = threadIdx.x + kThreads * i, row = rank * (B / kSplit) + e / kCols, j = col0 + e % kCols;
      float s = clusterSum<kCols, kSplit>(cluster, partial, e);
      hv[i] = (1 - f[i]) * hv[i] + f[i] * tanhf(s + p2[i]);
      ys[((int64_t)t * B + row) * H + j] = hv[i];
    }
    clusterArrive();
    publish(readyH + blockIdx.x);
    lap(3);
  }
  clusterWait(); // No block leaves while a peer may still read its partial products.
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
    for (int i = 0; i < 5; ++i) segments[i] = i < 4 ? local[i] : loadNs;
}

// The cuBLAS path's pointwise kernels (launched with programmatic dependent launch, as our models are).
__device__ __forceinline__ void gridWait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__global__ void stage1(const float *g, const float *p, const float *h, float *gate, float *rh) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; size_t i = (size_t)b * H + j;
  float f = sig(g[i] + p[i]); gate[i] = f; rh[i] = f * h[i];
}
__global__ void stage2(const float *g, const float *p, const float *gate, float *h, float *out) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; size_t i = (size_t)b * H + j;
  float z = gate[i], hn = (1 - z) * h[i] + z * tanhf(g[i] + p[i]); h[i] = hn; out[i] = hn;
}
__global__ void lstm(const float *g, float *h, float *cst) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; const float *r = g + (size_t)b * 4 * H; size_t i = (size_t)b * H + j;
  float cn = sig(r[H + j]) * cst[i] + sig(r[j]) * tanhf(r[2 * H + j]); cst[i] = cn; h[i] = sig(r[3 * H + j]) * tanhf(cn);
}
template <typename Kernel, typename... Args> void launchPdl(dim3 grid, dim3 block, cudaStream_t s, Kernel k, Args... args) {
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = block; cfg.stream = s;
  cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeProgrammaticStreamSerialization; attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr; cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, k, args...));
}
template <typename F> float timeGraph(cudaStream_t s, F &&body) {
  body(); CK(cudaStreamSynchronize(s)); CK(cudaGetLastError());
  cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); body(); CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
  for (int r = 0; r < 21; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
  return 1000 * ts[ts.size() / 2] / T;
}

int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd)); cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  auto fill = [](float *p, size_t n, float sc) { fillf<<<(n + 255) / 256, 256>>>(p, n, sc); };
  size_t nh = (size_t)B * H, nw = (size_t)H * H, np = (size_t)T * nh;
  float *Uf, *Uh, *P1, *P2, *h0, *h, *a, *gate, *G1, *G2, *ys, *ysRef, *U4, *G4, *cst;
  unsigned *ready; unsigned long long *segments;
  for (float **p : {&Uf, &Uh, &h0, &h, &a, &gate, &G1, &G2, &cst}) CK(cudaMalloc(p, std::max(nw, nh) * 4));
  for (float **p : {&P1, &P2, &ys, &ysRef}) CK(cudaMalloc(p, np * 4));
  CK(cudaMalloc(&U4, 4 * nw * 4)); CK(cudaMalloc(&G4, (size_t)T * 4 * nh * 4)); CK(cudaMalloc(&ready, 2 * 64 * 4)); CK(cudaMalloc(&segments, 6 * 8));
  fill(Uf, nw, 0.06f); fill(Uh, nw, 0.06f); fill(P1, np, 2); fill(P2, np, 2); fill(h0, nh, 1); fill(U4, 4 * nw, 0.05f); fill(G4, (size_t)T * 4 * nh, 1); fill(cst, nh, 1);
  CK(cudaDeviceSynchronize());
  float one = 1, zero = 0;
  dim3 pg(H / 256, B);
  auto cublasPath = [&](float *out) {
    CK(cudaMemcpyAsync(h, h0, nh * 4, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) {
      CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, H, B, H, &one, Uf, CUDA_R_32F, H, h, CUDA_R_32F, H, &zero, G1, CUDA_R_32F, H, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      launchPdl(pg, dim3(256), s, stage1, (const float *)G1, (const float *)(P1 + t * nh), (const float *)h, gate, a);
      CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, H, B, H, &one, Uh, CUDA_R_32F, H, a, CUDA_R_32F, H, &zero, G2, CUDA_R_32F, H, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      launchPdl(pg, dim3(256), s, stage2, (const float *)G2, (const float *)(P2 + t * nh), (const float *)gate, h, out + t * nh);
    }
  };
  auto lstmPath = [&] {
    for (int t = 0; t < T; ++t) {
      float *g = G4 + (size_t)t * 4 * nh;
      CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, 4 * H, B, H, &one, U4, CUDA_R_32F, H, h, CUDA_R_32F, H, &one, g, CUDA_R_32F, 4 * H, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      launchPdl(pg, dim3(256), s, lstm, (const float *)g, h, cst);
    }
  };
  cublasPath(ysRef); CK(cudaStreamSynchronize(s));
  std::vector<float> r0(np), r1(np); CK(cudaMemcpy(r0.data(), ysRef, np * 4, cudaMemcpyDeviceToHost));
  // One tiling: check against the cuBLAS path, time in three rounds with the cuBLAS path and the LSTM, break a phase down.
  auto tiling = [&](auto kernel, int cols, int split, int sharedFloats) {
    int sharedBytes = sharedFloats * 4, blocksX = H / cols;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sharedBytes));
    if (split > 8) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(blocksX, split); cfg.blockDim = dim3(kThreads); cfg.dynamicSmemBytes = sharedBytes; cfg.stream = s;
    cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeClusterDimension; attr.val.clusterDim.x = 1; attr.val.clusterDim.y = split; attr.val.clusterDim.z = 1;
    cfg.attrs = &attr; cfg.numAttrs = 1;
    int clusters = 0; CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    printf("persistent MGU, %d columns x K/%d per block: %d blocks in clusters of %d, %d B shared memory each; at most %d clusters resident (need %d)\n",
           cols, split, blocksX * split, split, sharedBytes, clusters, blocksX);
    if (clusters < blocksX) return; // Blocks wait on each other: every block must be resident.
    int bulk = 0;
    auto persistent = [&](float *out) {
      CK(cudaMemsetAsync(ready, 0, 2 * 64 * 4, s));
      CK(cudaLaunchKernelEx(&cfg, kernel, (const float *)Uf, (const float *)Uh, (const float *)P1, (const float *)P2, (const float *)h0, a, ys, ready, ready + 64, segments, bulk));
    };
    for (bulk = 0; bulk < 2; ++bulk) {
      persistent(ys); CK(cudaStreamSynchronize(s)); CK(cudaGetLastError());
      CK(cudaMemcpy(r1.data(), ys, np * 4, cudaMemcpyDeviceToHost));
      double md = 0, mr = 0; for (size_t i = 0; i < np; ++i) { md = std::max(md, (double)fabsf(r0[i] - r1[i])); mr = std::max(mr, (double)fabsf(r0[i])); }
      printf("  A staged by %s: vs cuBLAS path, all %d steps: max |diff| %.2e (max |h| %.2f)\n", bulk ? "bulk copies" : "cp.async", T, md, mr);
    }
    for (int round = 0; round < 3; ++round) {
      bulk = 0; float p0 = timeGraph(s, [&] { persistent(ys); });
      bulk = 1; float p1 = timeGraph(s, [&] { persistent(ys); });
      printf("  us per step: MGU cuBLAS path %.2f, MGU persistent %.2f (bulk copies %.2f), LSTM (cuBLAS + kernel) %.2f\n", timeGraph(s, [&] { cublasPath(ys); }), p0, p1, timeGraph(s, lstmPath));
    }
    const char *names[] = {"waiting for A's producers", "stage A + product", "cluster sync", "reduction + pointwise + publish"};
    for (bulk = 0; bulk < 2; ++bulk) {
      persistent(ys); CK(cudaStreamSynchronize(s));
      unsigned long long seg[5]; CK(cudaMemcpy(seg, segments, sizeof(seg), cudaMemcpyDeviceToHost));
      printf("  %s: block (0, 0), us per phase (2 per step):", bulk ? "bulk copies" : "cp.async");
      for (int i = 0; i < 4; ++i) printf(" %s %.2f;", names[i], seg[i] / 1000.0 / (2 * T));
      printf(" (of which waiting for the A slice %.2f)\n", seg[4] / 1000.0 / (2 * T));
    }
  };
  tiling(mguPersistent<64, 8>, 64, 8, Tiling<64, 8>::kSharedFloats);
  return 0;
}
