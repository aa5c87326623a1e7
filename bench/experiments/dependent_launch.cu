// Experiment: the probe's step (cuBLAS GEMM + fused LSTM kernel) with the
// kernel launched with programmatic dependent launch (PDL), in a CUDA graph.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)
__global__ void fillf(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__device__ float sig(float x) { return 1.f / (1.f + __expf(-x)); }
template <typename T, int WAIT, int TRIG>
__global__ void lstm(const float *g, float *c, T *h, float *out, int B, int H) {
  if (WAIT) asm volatile("griddepcontrol.wait;" ::: "memory");
  int j = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (j < H) {
    const float *gb = g + (size_t)b * 4 * H;
    float i = sig(gb[j]), f = sig(gb[H + j]), z = tanhf(gb[2 * H + j]), o = sig(gb[3 * H + j]);
    float cn = f * c[(size_t)b * H + j] + i * z; c[(size_t)b * H + j] = cn;
    float hn = o * tanhf(cn);
    if constexpr (sizeof(T) == 2) h[(size_t)b * H + j] = __float2bfloat16(hn); else h[(size_t)b * H + j] = hn;
    out[(size_t)b * H + j] = hn;
  }
  if (TRIG) asm volatile("griddepcontrol.launch_dependents;");
}
struct Case { const char *name; int T, B, H; bool bf16; };
int main() {
  cublasHandle_t hd; CK(cublasCreate(&hd));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cublasSetStream(hd, s));
  std::vector<Case> cases = {{"small", 100, 1, 256, false}, {"medium", 100, 64, 1024, false}, {"wide", 50, 32, 2048, false}, {"small bf16", 100, 1, 256, true}, {"medium bf16", 100, 64, 1024, true}, {"wide bf16", 50, 32, 2048, true}};
  for (auto &c : cases) {
    size_t G = 4 * (size_t)c.H, esz = c.bf16 ? 2 : 4;
    float *gates, *cst, *out; void *R, *h;
    CK(cudaMalloc(&gates, 4 * c.T * c.B * G)); CK(cudaMalloc(&R, esz * G * c.H)); CK(cudaMalloc(&h, esz * c.B * c.H)); CK(cudaMalloc(&cst, 4 * c.B * c.H)); CK(cudaMalloc(&out, 4 * (size_t)c.T * c.B * c.H));
    CK(cudaMemset(R, 0x3c, esz * G * c.H)); fillf<<<(c.T * c.B * G + 255) / 256, 256>>>(gates, c.T * c.B * G, .1f); CK(cudaMemset(h, 0, esz * c.B * c.H)); CK(cudaMemset(cst, 0, 4 * c.B * c.H));
    auto dt = c.bf16 ? CUDA_R_16BF : CUDA_R_32F; auto ct = c.bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32; float one = 1;
    for (int mode = 0; mode < 3; ++mode) {
      auto fwd = [&]() {
        for (int t = 0; t < c.T; ++t) {
          float *gt = gates + (size_t)t * c.B * G;
          CK(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, G, c.B, c.H, &one, R, dt, c.H, h, dt, c.H, &one, gt, CUDA_R_32F, G, ct, CUBLAS_GEMM_DEFAULT));
          cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3((c.H + 255) / 256, c.B); cfg.blockDim = 256; cfg.stream = s;
          cudaLaunchAttribute attr[1]; attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; attr[0].val.programmaticStreamSerializationAllowed = 1;
          cfg.attrs = attr; cfg.numAttrs = mode ? 1 : 0;
          float *o = out + (size_t)t * c.B * c.H;
          if (c.bf16) { if (mode == 2) CK(cudaLaunchKernelEx(&cfg, lstm<__nv_bfloat16, 1, 1>, gt, cst, (__nv_bfloat16 *)h, o, c.B, c.H)); else if (mode == 1) CK(cudaLaunchKernelEx(&cfg, lstm<__nv_bfloat16, 1, 0>, gt, cst, (__nv_bfloat16 *)h, o, c.B, c.H)); else CK(cudaLaunchKernelEx(&cfg, lstm<__nv_bfloat16, 0, 0>, gt, cst, (__nv_bfloat16 *)h, o, c.B, c.H)); }
          else { if (mode == 2) CK(cudaLaunchKernelEx(&cfg, lstm<float, 1, 1>, gt, cst, (float *)h, o, c.B, c.H)); else if (mode == 1) CK(cudaLaunchKernelEx(&cfg, lstm<float, 1, 0>, gt, cst, (float *)h, o, c.B, c.H)); else CK(cudaLaunchKernelEx(&cfg, lstm<float, 0, 0>, gt, cst, (float *)h, o, c.B, c.H)); }
        } };
      fwd(); CK(cudaStreamSynchronize(s));
      cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); fwd(); CK(cudaStreamEndCapture(s, &g));
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); std::vector<float> ts;
      for (int r = 0; r < 20; ++r) { cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end());
      // also no-graph
      std::vector<float> tn;
      for (int r = 0; r < 8; ++r) { cudaEventRecord(e0, s); fwd(); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) tn.push_back(ms); }
      std::sort(tn.begin(), tn.end());
      printf("%-12s %s: graph %.2f us/step, no graph %.2f us/step\n", c.name, mode == 0 ? "plain        " : mode == 1 ? "PDL wait     " : "PDL wait+trig", 1000 * ts[ts.size() / 2] / c.T, 1000 * tn[tn.size() / 2] / c.T);
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
    }
    cudaFree(gates); cudaFree(R); cudaFree(h); cudaFree(cst); cudaFree(out);
  }
}
