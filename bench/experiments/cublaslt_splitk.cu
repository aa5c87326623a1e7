// Experiment: per-step recurrent GEMM (+ a dependent pointwise kernel) with
// cublasGemmEx default vs cublasLt heuristic algos with split-K variants.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__global__ void fillb(__nv_bfloat16 *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = __float2bfloat16(s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f)); }
// h[m, k] = tanh(g[m, k] + g[m, k + K] ...) : reads all N gate columns once per row, writes A.
template <typename T> __global__ void step(const float *g, T *h, int M, int N, int K) {
  int k = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y; if (k >= K) return;
  float s = 0; for (int j = k; j < N; j += K) s += g[(size_t)m * N + j];
  float v = tanhf(s); if constexpr (sizeof(T) == 2) h[(size_t)m * K + k] = __float2bfloat16(v); else h[(size_t)m * K + k] = v;
}
struct Case { const char *name; int m, n, k, steps; bool bf16; };
int main() {
  cublasHandle_t h; CK(cublasCreate(&h)); cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(h, s));
  size_t wsBytes = 64 << 20; void *ws; CK(cudaMalloc(&ws, wsBytes));
  std::vector<Case> cases = {{"small lstm", 1, 1024, 256, 100, false}, {"medium lstm", 64, 4096, 1024, 100, false}, {"medium gru", 64, 3072, 1024, 100, false},
    {"medium N1024", 64, 1024, 1024, 100, false}, {"medium N2048", 64, 2048, 1024, 100, false}, {"medium lstmp N4096K512", 64, 4096, 512, 100, false},
    {"wide lstm", 32, 8192, 2048, 50, false}, {"wide gru", 32, 6144, 2048, 50, false}, {"thru lstm", 256, 2048, 512, 100, false},
    {"medium lstm bf16", 64, 4096, 1024, 100, true}, {"wide lstm bf16", 32, 8192, 2048, 50, true}, {"medium gru bf16", 64, 3072, 1024, 100, true}, {"wide gru bf16", 32, 6144, 2048, 50, true}, {"small lstm bf16", 1, 1024, 256, 100, true}};
  for (auto &c : cases) {
    size_t esz = c.bf16 ? 2 : 4; size_t nw = (size_t)c.n * c.k, na = (size_t)c.m * c.k, ng = (size_t)c.steps * c.m * c.n;
    void *W, *A; float *G;
    CK(cudaMalloc(&W, nw * esz)); CK(cudaMalloc(&A, na * esz)); CK(cudaMalloc(&G, ng * 4));
    if (c.bf16) { fillb<<<(nw + 255) / 256, 256>>>((__nv_bfloat16 *)W, nw, 0.05f); fillb<<<(na + 255) / 256, 256>>>((__nv_bfloat16 *)A, na, 1.f); }
    else { fillf<<<(nw + 255) / 256, 256>>>((float *)W, nw, 0.05f); fillf<<<(na + 255) / 256, 256>>>((float *)A, na, 1.f); }
    fillf<<<(ng + 255) / 256, 256>>>(G, ng, 1.f); CK(cudaDeviceSynchronize());
    auto dt = c.bf16 ? CUDA_R_16BF : CUDA_R_32F; auto comp = c.bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    float one = 1;
    cublasLtMatmulDesc_t desc; CK(cublasLtMatmulDescCreate(&desc, comp, CUDA_R_32F)); cublasOperation_t opT = CUBLAS_OP_T;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)));
    cublasLtMatrixLayout_t la, lb, lc; CK(cublasLtMatrixLayoutCreate(&la, dt, c.k, c.n, c.k)); CK(cublasLtMatrixLayoutCreate(&lb, dt, c.k, c.m, c.k)); CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, c.n, c.m, c.n));
    cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref)); CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes)));
    cublasLtMatmulHeuristicResult_t res[32]; int nres = 0; CK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 32, res, &nres));
    // candidates: -1 = GemmEx default; else (heuristic index, splitk, scheme)
    struct Cand { int idx; int split; int scheme; cublasLtMatmulAlgo_t algo; size_t ws; };
    std::vector<Cand> cands; cands.push_back({-1, 0, 0, {}, 0});
    for (int i = 0; i < nres; ++i) {
      cands.push_back({i, 0, 0, res[i].algo, res[i].workspaceSize});
      int splitSupport = 0; size_t w = 0; cublasLtMatmulAlgoCapGetAttribute(&res[i].algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitSupport, sizeof(int), &w);
      if (!splitSupport) continue;
      for (int sk : {2, 3, 4, 6, 8, 16}) for (uint32_t scheme : {1u, 2u}) {
        cublasLtMatmulAlgo_t a = res[i].algo; uint32_t skv = sk;
        cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &skv, sizeof(skv));
        cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme));
        cublasLtMatmulHeuristicResult_t chk; if (cublasLtMatmulAlgoCheck(lt, desc, la, lb, lc, lc, &a, &chk) != CUBLAS_STATUS_SUCCESS) continue;
        if (chk.workspaceSize > wsBytes) continue;
        cands.push_back({i, sk, (int)scheme, a, chk.workspaceSize});
      }
    }
    struct R { float us; Cand c; }; std::vector<R> rs;
    for (auto &cd : cands) {
      auto gemm = [&](float *gt) {
        if (cd.idx < 0) return (int)cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, c.n, c.m, c.k, &one, W, dt, c.k, A, dt, c.k, &one, gt, CUDA_R_32F, c.n, comp, CUBLAS_GEMM_DEFAULT);
        return (int)cublasLtMatmul(lt, desc, &one, W, la, A, lb, &one, gt, lc, gt, lc, &cd.algo, ws, cd.ws, s); };
      auto fwd = [&]() { int bad = 0; for (int t = 0; t < c.steps; ++t) { float *gt = G + (size_t)t * c.m * c.n; bad |= gemm(gt);
          dim3 grid((c.k + 255) / 256, c.m); if (c.bf16) step<<<grid, 256, 0, s>>>(gt, (__nv_bfloat16 *)A, c.m, c.n, c.k); else step<<<grid, 256, 0, s>>>(gt, (float *)A, c.m, c.n, c.k); } return bad; };
      if (fwd()) continue; if (cudaStreamSynchronize(s)) { printf("sync fail\n"); exit(1); }
      cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); int bad = fwd(); CK(cudaStreamEndCapture(s, &g)); if (bad) { cudaGraphDestroy(g); continue; }
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
      for (int r = 0; r < 15; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end()); rs.push_back({1000 * ts[ts.size() / 2] / c.steps, cd});
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
    }
    std::sort(rs.begin() + 1, rs.end(), [](const R &a, const R &b) { return a.us < b.us; });
    printf("%-24s M%4d N%5d K%5d  gemmEx %.2f us/step | heur0 ", c.name, c.m, c.n, c.k, rs[0].us);
    for (auto &r : rs) if (r.c.idx == 0 && r.c.split == 0) printf("%.2f", r.us);
    printf(" | best:"); for (int i = 1; i < (int)rs.size() && i <= 4; ++i) printf(" %.2f(h%d,sk%d,s%d)", rs[i].us, rs[i].c.idx, rs[i].c.split, rs[i].c.scheme);
    printf("  [%zu cands]\n", rs.size());
    cudaFree(W); cudaFree(A); cudaFree(G);
  }
  return 0;
}
