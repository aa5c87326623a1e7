// Experiment: a one-launch TF32 GEMM for few rows on weights that fit in L2.
//
// cuBLAS runs the [64 x 1024] x [1024 x N] recurrent GEMMs of the two-stage
// cells (MGU, GRU with the reset gate before the matmul) as split-K plus a
// reduction kernel. Here a cluster of S blocks splits K, each block stages
// its slice of A and of the weights in shared memory with cp.async, and the
// blocks add their partial products through distributed shared memory: one
// launch. Timed in CUDA graphs: the GEMM alone (100 in a row) and the
// two-stage steps with their pointwise kernels, against cublasGemmEx.
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

constexpr int kCols = 64, kTilesPerWarp = 4, kGroups = kCols / 8 / kTilesPerWarp, kWarpsPerK = 4;
constexpr int kWarps = kGroups * kWarpsPerK, kChunk = 32 * kWarpsPerK, kStride = kChunk + 4, kStages = 2;

__device__ __forceinline__ uint32_t tf32Bits(float x) { uint32_t r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ uint32_t sharedAddress(const void *p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int MT>
__global__ void __launch_bounds__(kWarps * 32) l2gemm(const float *a, int64_t lda, const float *w, int64_t ldw, float *c, int64_t ldc, int m, int k, int accumulate, int mode) {
  constexpr int kRows = MT * 16, kStageFloats = (kRows + kCols) * kStride;
  extern __shared__ float4 shared4[];
  float *shared = reinterpret_cast<float *>(shared4);
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int split = gridDim.y, rank = blockIdx.y, kRange = k / split, k0 = rank * kRange, chunks = kRange / kChunk;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int group = warp % kGroups, kGroup = warp / kGroups;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kCols;
  auto issue = [&](int chunk) {
    if (chunk < chunks) {
      float *stage = shared + (chunk % kStages) * kStageFloats;
      int kb = k0 + chunk * kChunk;
      for (int i = threadIdx.x; i < (kRows + kCols) * (kChunk / 4); i += kWarps * 32) {
        int row = i / (kChunk / 4), v = (i % (kChunk / 4)) * 4;
        const float *source = row < kRows ? a + static_cast<int64_t>(row < m ? row : 0) * lda + kb + v : w + (col0 + row - kRows) * ldw + kb + v;
        int bytes = row < kRows && row >= m ? 0 : 16;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sharedAddress(stage + row * kStride + v)), "l"(source), "r"(bytes));
      }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  for (int s = 0; s < kStages - 1; ++s) issue(s);
  float acc[kTilesPerWarp][MT][4] = {};
  for (int chunk = 0; chunk < chunks; ++chunk) {
    issue(chunk + kStages - 1);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1) : "memory");
    __syncthreads();
    const float *stage = shared + (chunk % kStages) * kStageFloats;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      int kk = kGroup * 32 + 8 * s;
      uint32_t b[kTilesPerWarp][2];
#pragma unroll
      for (int n = 0; n < kTilesPerWarp; ++n) {
        const float *wr = stage + (kRows + (group * kTilesPerWarp + n) * 8 + g) * kStride + kk;
        b[n][0] = tf32Bits(wr[t]); b[n][1] = tf32Bits(wr[t + 4]);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const float *rows = stage + mt * 16 * kStride + kk;
        uint32_t fragment[4] = {__float_as_uint(rows[g * kStride + t]), __float_as_uint(rows[(g + 8) * kStride + t]),
                                __float_as_uint(rows[g * kStride + t + 4]), __float_as_uint(rows[(g + 8) * kStride + t + 4])};
#pragma unroll
        for (int n = 0; n < kTilesPerWarp; ++n) mma(acc[n][mt], fragment, b[n][0], b[n][1]);
      }
    }
    __syncthreads();
  }
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  float *partial = shared + kGroup * kRows * kCols, *local = shared + kWarpsPerK * kRows * kCols;
#pragma unroll
  for (int n = 0; n < kTilesPerWarp; ++n)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      int col = (group * kTilesPerWarp + n) * 8 + 2 * t, row = mt * 16 + g;
      *reinterpret_cast<float2 *>(&partial[row * kCols + col]) = make_float2(acc[n][mt][0], acc[n][mt][1]);
      *reinterpret_cast<float2 *>(&partial[(row + 8) * kCols + col]) = make_float2(acc[n][mt][2], acc[n][mt][3]);
    }
  __syncthreads();
  for (int i = threadIdx.x; i < kRows * kCols; i += kWarps * 32) {
    float sum = 0;
#pragma unroll
    for (int kg = 0; kg < kWarpsPerK; ++kg) sum += shared[kg * kRows * kCols + i];
    local[i] = sum;
  }
  if (mode == 1) { // Diagnostic: no cross-block reduction (wrong sums).
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * kCols / split; i += kWarps * 32) c[(rank * kRows / split + i / kCols) * ldc + col0 + i % kCols] = local[i];
    return;
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  int rowsPerRank = (kRows + split - 1) / split;
  for (int i = threadIdx.x; i < rowsPerRank * kCols; i += kWarps * 32) {
    int row = (i / kCols) * split + rank, col = i % kCols;
    if (row >= m || row >= kRows) continue;
    float sum = 0;
    for (int r = 0; r < split; ++r) sum += cluster.map_shared_rank(local, r)[row * kCols + col];
    float *out = c + row * ldc + col0 + col;
    *out = accumulate ? *out + sum : sum;
  }
  cluster.sync();
}

int sharedBytes(int rows) { return std::max(kStages * (rows + kCols) * kStride * 4, (kWarpsPerK + 1) * rows * kCols * 4); }

bool pdl = false; int mode = 0; // Launch our kernels with programmatic stream serialization.
cudaError_t launchOurs(int m, int n, int k, const float *A, const float *W, float *C, int split, bool acc, cudaStream_t s) {
  int mt = m <= 16 ? 1 : m <= 32 ? 2 : 4;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(n / kCols, split, 1); cfg.blockDim = dim3(kWarps * 32, 1, 1); cfg.dynamicSmemBytes = sharedBytes(mt * 16); cfg.stream = s;
  cudaLaunchAttribute attr[2]; attr[0].id = cudaLaunchAttributeClusterDimension; attr[0].val.clusterDim.x = 1; attr[0].val.clusterDim.y = split; attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization; attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr; cfg.numAttrs = pdl ? 2 : 1;
  int64_t ld = k, ldc = n; int a = acc ? 1 : 0;
  if (mt == 1) return cudaLaunchKernelEx(&cfg, l2gemm<1>, A, ld, W, ld, C, ldc, m, k, a, mode);
  if (mt == 2) return cudaLaunchKernelEx(&cfg, l2gemm<2>, A, ld, W, ld, C, ldc, m, k, a, mode);
  return cudaLaunchKernelEx(&cfg, l2gemm<4>, A, ld, W, ld, C, ldc, m, k, a, mode);
}

__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }
__device__ __forceinline__ void gridWait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__global__ void stage1(const float *g, const float *p, const float *h, float *gate, float *rh, int M, int H, int N1) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t row = (size_t)b * N1; float a = sig(g[row + j] + p[row + j]);
  float z = N1 == H ? a : sig(g[row + H + j] + p[row + H + j]);
  gate[(size_t)b * H + j] = z; rh[(size_t)b * H + j] = a * h[(size_t)b * H + j];
}
__global__ void stage2(const float *g, const float *p, const float *gate, float *h, float *out, int M, int H) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t i = (size_t)b * H + j; float z = gate[i]; float hn = (1 - z) * h[i] + z * tanhf(g[i] + p[i]); h[i] = hn; out[i] = hn;
}
// LSTM step on gates [M, 4H] (g already holds projection + product).
__global__ void lstm(const float *g, float *h, float *cst, int M, int H) {
  gridWait();
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  const float *r = g + (size_t)b * 4 * H; size_t i = (size_t)b * H + j;
  float cn = sig(r[H + j]) * cst[i] + sig(r[j]) * tanhf(r[2 * H + j]); cst[i] = cn; h[i] = sig(r[3 * H + j]) * tanhf(cn);
}

template <typename Kernel, typename... Args> void launchPdl(dim3 grid, dim3 block, cudaStream_t s, Kernel k, Args... args) {
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = block; cfg.stream = s;
  cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeProgrammaticStreamSerialization; attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr; cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, k, args...));
}

template <typename F> float timeGraph(cudaStream_t s, int reps, F &&body) {
  body(); CK(cudaStreamSynchronize(s)); CK(cudaGetLastError());
  cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); body(); CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
  for (int r = 0; r < 21; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
  return 1000 * ts[ts.size() / 2] / reps;
}

int main(int argc, char **argv) {
  bool profile = argc > 1; // One launch of each variant, for Nsight Compute.
  cublasHandle_t hd; CK(cublasCreate(&hd)); cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  for (auto f : {l2gemm<1>, l2gemm<2>, l2gemm<4>}) CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  float one = 1, zero = 0;
  auto fill = [](float *p, size_t n, float sc) { fillf<<<(n + 255) / 256, 256>>>(p, n, sc); };
  struct Case { int m, n, k; };
  std::vector<Case> cases = {{64, 1024, 1024}, {64, 2048, 1024}, {64, 3072, 1024}, {64, 4096, 1024}, {64, 4096, 512}, {1, 1024, 256}, {1, 768, 256}, {32, 1024, 1024}, {16, 2048, 1024}};
  {
    cudaLaunchConfig_t cfg = {}; cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = sharedBytes(64);
    for (int split : {2, 4, 8}) {
      cfg.gridDim = dim3(16, split); cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeClusterDimension; attr.val.clusterDim.x = 1; attr.val.clusterDim.y = split; attr.val.clusterDim.z = 1;
      cfg.attrs = &attr; cfg.numAttrs = 1; int clusters = 0; CK(cudaOccupancyMaxActiveClusters(&clusters, l2gemm<4>, &cfg));
      printf("max active clusters of %d (MT 4, %d B shared): %d\n", split, sharedBytes(64), clusters);
    }
  }
  printf("GEMM alone, us per GEMM (100 in a graph), C = A W^T, TF32\n");
  for (auto c : cases) {
    float *A, *W, *C, *R; size_t nw = (size_t)c.n * c.k;
    CK(cudaMalloc(&A, (size_t)c.m * c.k * 4)); CK(cudaMalloc(&W, nw * 4)); CK(cudaMalloc(&C, (size_t)c.m * c.n * 4)); CK(cudaMalloc(&R, (size_t)c.m * c.n * 4));
    fill(A, (size_t)c.m * c.k, 1); fill(W, nw, 0.05f); CK(cudaDeviceSynchronize());
    auto cublas = [&](float *out) { CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, c.n, c.m, c.k, &one, W, CUDA_R_32F, c.k, A, CUDA_R_32F, c.k, &zero, out, CUDA_R_32F, c.n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)); };
    cublas(R); CK(cudaStreamSynchronize(s)); std::vector<float> ref((size_t)c.m * c.n), v(ref.size());
    CK(cudaMemcpy(ref.data(), R, ref.size() * 4, cudaMemcpyDeviceToHost));
    if (profile) {
      cublas(C);
      for (int split : {1, 2, 4, 8}) if (c.k % (split * kChunk) == 0) CK(launchOurs(c.m, c.n, c.k, A, W, C, split, false, s));
      CK(cudaStreamSynchronize(s));
      continue;
    }
    float tc = timeGraph(s, 100, [&] { for (int i = 0; i < 100; ++i) cublas(C); });
    printf("M %3d N %5d K %5d: cuBLAS %.2f; ours", c.m, c.n, c.k, tc);
    for (int split : {1, 2, 4, 8}) {
      if (c.k % (split * kChunk) || c.n % kCols) continue;
      CK(cudaMemset(C, 0, ref.size() * 4)); CK(launchOurs(c.m, c.n, c.k, A, W, C, split, false, s)); CK(cudaStreamSynchronize(s));
      CK(cudaMemcpy(v.data(), C, v.size() * 4, cudaMemcpyDeviceToHost));
      double md = 0, mr = 0; for (size_t i = 0; i < v.size(); ++i) { md = std::max(md, (double)fabsf(v[i] - ref[i])); mr = std::max(mr, (double)fabsf(ref[i])); }
      float to = timeGraph(s, 100, [&] { for (int i = 0; i < 100; ++i) CK(launchOurs(c.m, c.n, c.k, A, W, C, split, false, s)); });
      pdl = true; float tp = timeGraph(s, 100, [&] { for (int i = 0; i < 100; ++i) CK(launchOurs(c.m, c.n, c.k, A, W, C, split, false, s)); }); pdl = false;
      mode = 1; float tn = timeGraph(s, 100, [&] { for (int i = 0; i < 100; ++i) CK(launchOurs(c.m, c.n, c.k, A, W, C, split, false, s)); }); mode = 0;
      printf("  S%d %.2f, PDL %.2f, no reduction %.2f (err %.1e)", split, to, tp, tn, md / mr);
    }
    printf("\n");
    for (float *p : {A, W, C, R}) cudaFree(p);
  }
  if (profile) return 0;
  // Steps: MGU (N1 = H), GRU with the reset gate before the matmul (N1 = 2H), LSTM (one GEMM, N = 4H).
  printf("Steps at medium (T 100, B 64, H 1024), us per step\n");
  const int T = 100, M = 64, H = 1024;
  for (int kind = 0; kind < 3; ++kind) {
    int N1 = kind == 0 ? H : kind == 1 ? 2 * H : 4 * H, N2 = H, K = H;
    float *W1, *W2, *P1, *P2, *G1, *G2, *h, *cst, *gate, *rh, *out;
    CK(cudaMalloc(&W1, (size_t)N1 * K * 4)); CK(cudaMalloc(&W2, (size_t)N2 * K * 4)); CK(cudaMalloc(&P1, (size_t)T * M * N1 * 4)); CK(cudaMalloc(&P2, (size_t)T * M * N2 * 4));
    CK(cudaMalloc(&G1, (size_t)M * N1 * 4)); CK(cudaMalloc(&G2, (size_t)M * N2 * 4)); CK(cudaMalloc(&h, (size_t)M * H * 4)); CK(cudaMalloc(&cst, (size_t)M * H * 4));
    CK(cudaMalloc(&gate, (size_t)M * H * 4)); CK(cudaMalloc(&rh, (size_t)M * H * 4)); CK(cudaMalloc(&out, (size_t)T * M * H * 4));
    fill(W1, (size_t)N1 * K, 0.05f); fill(W2, (size_t)N2 * K, 0.05f); fill(P1, (size_t)T * M * N1, 1); fill(P2, (size_t)T * M * N2, 1); fill(h, (size_t)M * H, 1); fill(cst, (size_t)M * H, 1);
    CK(cudaDeviceSynchronize());
    dim3 grid((H + 255) / 256, M);
    auto gemm = [&](const float *Wt, const float *Ain, float *Cout, int N, int split) {
      if (split == 0) CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, Wt, CUDA_R_32F, K, Ain, CUDA_R_32F, K, &zero, Cout, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      else CK(launchOurs(M, N, K, Ain, Wt, Cout, split, false, s));
    };
    auto fwd = [&](int s1, int s2) {
      for (int t = 0; t < T; ++t) {
        gemm(W1, h, G1, N1, s1);
        if (kind < 2) {
          launchPdl(grid, dim3(256), s, stage1, (const float *)G1, (const float *)(P1 + (size_t)t * M * N1), (const float *)h, gate, rh, M, H, N1);
          gemm(W2, rh, G2, N2, s2);
          launchPdl(grid, dim3(256), s, stage2, (const float *)G2, (const float *)(P2 + (size_t)t * M * N2), (const float *)gate, h, out + (size_t)t * M * H, M, H);
        } else launchPdl(grid, dim3(256), s, lstm, (const float *)G1, h, cst, M, H);
      }
    };
    const char *names[] = {"mgu", "gru_reset_before", "lstm"};
    printf("%-18s cuBLAS %.2f; ours (our GEMM without / with PDL)", names[kind], timeGraph(s, T, [&] { fwd(0, 0); }));
    for (int s1 : {1, 2, 4, 8}) for (int s2 : {2, 4, 8}) {
      if (kind == 2 && s2 != 2) continue;
      if (N1 / kCols * s1 > 132 || N2 / kCols * s2 > 132) continue;
      pdl = false; float a = timeGraph(s, T, [&] { fwd(s1, s2); });
      pdl = true; float b = timeGraph(s, T, [&] { fwd(s1, s2); }); pdl = false;
      printf("  S%d/%d %.2f/%.2f", s1, s2, a, b);
    }
    printf("\n");
    for (float *p : {W1, W2, P1, P2, G1, G2, h, cst, gate, rh, out}) cudaFree(p);
  }
  return 0;
}
