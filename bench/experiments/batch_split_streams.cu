// Experiment: independent batch slices of one recurrence on concurrent streams.
//
// The rows of a batch never interact inside a cell, so a [B, H] recurrence is
// P independent [B/P, H] recurrences. In one CUDA graph, P chains forked from
// one stream run concurrently: where each step is a chain of latency-bound
// launches (the two-stage cells: GEMM, pointwise, GEMM, pointwise) the chains
// can hide each other's gaps. Each step is the cuBLAS GEMM (cuBLAS's own
// choice, a handle per stream) plus one plain pointwise kernel per stage, at
// the `medium` shape; µs per step for P = 1, 2, 4.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }

// LSTM: gates g = [i f g o] of [m, 4H] plus the projection p.
__global__ void lstm(const float *g, const float *p, float *c, float *h, float *out, int H) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t r = (size_t)b * 4 * H, i = (size_t)b * H + j;
  float ig = sig(g[r + j] + p[r + j]), fg = sig(g[r + H + j] + p[r + H + j]);
  float gg = tanhf(g[r + 2 * H + j] + p[r + 2 * H + j]), og = sig(g[r + 3 * H + j] + p[r + 3 * H + j]);
  float cn = fg * c[i] + ig * gg; c[i] = cn; float hn = og * tanhf(cn); h[i] = hn; out[i] = hn;
}
// Two-stage cells: stage 1 computes the gate(s) and r*h (MGU: N1 == H, the
// gate is also r; GRU with the reset gate first: N1 == 2H, r then z).
__global__ void stage1(const float *g, const float *p, const float *h, float *gate, float *rh, int H, int N1) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t row = (size_t)b * N1, i = (size_t)b * H + j;
  float a = sig(g[row + j] + p[row + j]);
  float z = N1 == H ? a : sig(g[row + H + j] + p[row + H + j]);
  gate[i] = z; rh[i] = a * h[i];
}
__global__ void stage2(const float *g, const float *p, const float *gate, float *h, float *out, int H) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y; if (j >= H) return;
  size_t i = (size_t)b * H + j; float z = gate[i];
  float hn = (1 - z) * h[i] + z * tanhf(g[i] + p[i]); h[i] = hn; out[i] = hn;
}

enum Kind { kLstm, kTwoStage };
struct Case { const char *name; Kind kind; int T, M, H, N1; };

int main() {
  constexpr int kMaxP = 8;
  cudaStream_t st[kMaxP]; cublasHandle_t hd[kMaxP]; cudaEvent_t fork, join[kMaxP];
  for (int q = 0; q < kMaxP; ++q) {
    CK(cudaStreamCreateWithFlags(&st[q], cudaStreamNonBlocking)); CK(cublasCreate(&hd[q])); CK(cublasSetStream(hd[q], st[q]));
    CK(cudaEventCreateWithFlags(&join[q], cudaEventDisableTiming));
  }
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  std::vector<Case> cases = {{"lstm medium", kLstm, 100, 64, 1024, 4096}, {"mgu medium", kTwoStage, 100, 64, 1024, 1024},
                             {"gru_reset_before medium", kTwoStage, 100, 64, 1024, 2048}, {"lstm wide", kLstm, 50, 32, 2048, 8192}};
  float one = 1, zero = 0;
  for (auto &c : cases) {
    int H = c.H, M = c.M, K = H, N1 = c.N1, N2 = H;
    float *W1, *W2, *P1, *P2, *G1, *G2, *h, *cs, *gate, *rh, *out;
    CK(cudaMalloc(&W1, (size_t)N1 * K * 4)); CK(cudaMalloc(&W2, (size_t)N2 * K * 4));
    CK(cudaMalloc(&P1, (size_t)c.T * M * N1 * 4)); CK(cudaMalloc(&P2, (size_t)c.T * M * N2 * 4));
    CK(cudaMalloc(&G1, (size_t)M * N1 * 4)); CK(cudaMalloc(&G2, (size_t)M * N2 * 4));
    CK(cudaMalloc(&h, (size_t)M * H * 4)); CK(cudaMalloc(&cs, (size_t)M * H * 4)); CK(cudaMalloc(&gate, (size_t)M * H * 4)); CK(cudaMalloc(&rh, (size_t)M * H * 4));
    CK(cudaMalloc(&out, (size_t)c.T * M * H * 4));
    auto fill = [](float *p, size_t n, float sc) { fillf<<<(n + 255) / 256, 256>>>(p, n, sc); };
    auto reset = [&] { fill(W1, (size_t)N1 * K, 0.05f); fill(W2, (size_t)N2 * K, 0.05f); fill(P1, (size_t)c.T * M * N1, 1); fill(P2, (size_t)c.T * M * N2, 1); fill(h, (size_t)M * H, 1); fill(cs, (size_t)M * H, 1); CK(cudaDeviceSynchronize()); };
    reset();
    // Rows [b0, b0 + m) of every [M, N] buffer: row-major, so an offset of b0 * N.
    auto gemm = [&](int q, const float *W, const float *A, float *C, int N, int m) {
      return (int)cublasGemmEx(hd[q], CUBLAS_OP_T, CUBLAS_OP_N, N, m, K, &one, W, CUDA_R_32F, K, A, CUDA_R_32F, K, &zero, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    };
    auto chain = [&](int q, int b0, int m) {
      int bad = 0; dim3 grid((H + 255) / 256, m); size_t oh = (size_t)b0 * H;
      for (int t = 0; t < c.T; ++t) {
        float *o = out + (size_t)t * M * H + oh;
        const float *p1 = P1 + ((size_t)t * M + b0) * N1, *p2 = P2 + ((size_t)t * M + b0) * N2;
        float *g1 = G1 + (size_t)b0 * N1, *g2 = G2 + (size_t)b0 * N2;
        bad |= gemm(q, W1, h + oh, g1, N1, m);
        if (c.kind == kLstm) { lstm<<<grid, 256, 0, st[q]>>>(g1, p1, cs + oh, h + oh, o, H); continue; }
        stage1<<<grid, 256, 0, st[q]>>>(g1, p1, h + oh, gate + oh, rh + oh, H, N1);
        bad |= gemm(q, W2, rh + oh, g2, N2, m);
        stage2<<<grid, 256, 0, st[q]>>>(g2, p2, gate + oh, h + oh, o, H);
      }
      return bad;
    };
    auto fwd = [&](int P) {
      int bad = 0, m = M / P;
      CK(cudaEventRecord(fork, st[0]));
      for (int q = 1; q < P; ++q) CK(cudaStreamWaitEvent(st[q], fork, 0));
      for (int q = 0; q < P; ++q) bad |= chain(q, q * m, m);
      for (int q = 1; q < P; ++q) { CK(cudaEventRecord(join[q], st[q])); CK(cudaStreamWaitEvent(st[0], join[q], 0)); }
      return bad;
    };
    auto timeIt = [&](int P) -> float {
      if (fwd(P) || cudaStreamSynchronize(st[0])) return -1;
      cudaGraph_t g; CK(cudaStreamBeginCapture(st[0], cudaStreamCaptureModeThreadLocal)); int bad = fwd(P); CK(cudaStreamEndCapture(st[0], &g));
      if (bad) { cudaGraphDestroy(g); return -1; }
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
      for (int r = 0; r < 25; ++r) { cudaEventRecord(e0, st[0]); cudaGraphLaunch(ge, st[0]); cudaEventRecord(e1, st[0]); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end());
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaEventDestroy(e0); cudaEventDestroy(e1);
      return 1000 * ts[ts.size() / 2] / c.T;
    };
    // The last hidden state must not depend on the split (TF32 kernels may differ with m: loose check).
    auto result = [&](int P) { reset(); fwd(P); CK(cudaStreamSynchronize(st[0])); std::vector<float> v((size_t)M * H); CK(cudaMemcpy(v.data(), h, v.size() * 4, cudaMemcpyDeviceToHost)); return v; };
    std::vector<float> ref = result(1);
    printf("%-24s M%3d H%5d N1 %5d:", c.name, M, H, N1);
    for (int P : {1, 2, 4, 8}) {
      if (M % P) continue;
      std::vector<float> v = result(P); double md = 0; for (size_t i = 0; i < v.size(); ++i) md = std::max(md, (double)fabsf(v[i] - ref[i]));
      float a = timeIt(P), b = timeIt(P);
      printf(" P%d %.2f/%.2f us (maxdiff %.1e)", P, a, b, md);
    }
    printf("\n");
    for (float *p : {W1, W2, P1, P2, G1, G2, h, cs, gate, rh, out}) cudaFree(p);
  }
  return 0;
}
