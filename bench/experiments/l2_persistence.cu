// Experiment: recurrent GEMM time with the weights kept in persisting L2.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { auto e = (x); if (e != 0) { printf("err %s line %d: %d\n", #x, __LINE__, (int)e); exit(1);} } while (0)

__global__ void fill(float *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f); }
__global__ void fillb(__nv_bfloat16 *p, size_t n, float s) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = __float2bfloat16(s * (((i * 2654435761u) % 1000) / 1000.0f - 0.5f)); }

int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s L2 %d MiB persistingMax %d MiB accessPolicyMaxWindow %d MiB\n", prop.name, prop.l2CacheSize >> 20, prop.persistingL2CacheMaxSize >> 20, prop.accessPolicyMaxWindowSize >> 20);
  cublasHandle_t h; CK(cublasCreate(&h));
  cudaStream_t s; CK(cudaStreamCreate(&s)); CK(cublasSetStream(h, s));
  struct Case { const char *name; int m, n, k; bool bf16; int steps; };
  std::vector<Case> cases = {{"lstm-wide-tf32", 32, 8192, 2048, false, 50}, {"gru-wide-tf32", 32, 6144, 2048, false, 50}, {"lstm-wide-bf16", 32, 8192, 2048, true, 50}, {"lstm-medium-tf32", 64, 4096, 1024, false, 100}, {"lstm-medium-bf16", 64, 4096, 1024, true, 100}};
  for (auto &c : cases) {
    size_t esz = c.bf16 ? 2 : 4;
    void *W, *A; float *C;
    CK(cudaMalloc(&W, (size_t)c.n * c.k * esz)); CK(cudaMalloc(&A, (size_t)c.m * c.k * esz)); CK(cudaMalloc(&C, (size_t)c.m * c.n * 4));
    size_t nw = (size_t)c.n * c.k, na = (size_t)c.m * c.k;
    if (c.bf16) { fillb<<<(nw + 255) / 256, 256>>>((__nv_bfloat16 *)W, nw, 0.05f); fillb<<<(na + 255) / 256, 256>>>((__nv_bfloat16 *)A, na, 1.f); }
    else { fill<<<(nw + 255) / 256, 256>>>((float *)W, nw, 0.05f); fill<<<(na + 255) / 256, 256>>>((float *)A, na, 1.f); }
    CK(cudaDeviceSynchronize());
    size_t wbytes = nw * esz;
    float alpha = 1, beta = 1;
    auto dt = c.bf16 ? CUDA_R_16BF : CUDA_R_32F;
    auto comp = c.bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    auto gemm = [&] { CK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, c.n, c.m, c.k, &alpha, W, dt, c.k, A, dt, c.k, &beta, C, CUDA_R_32F, c.n, comp, CUBLAS_GEMM_DEFAULT)); };
    // modes: 0 none, 1 stream attr during capture, 2 node attr after capture
    for (int mode = 0; mode < 3; ++mode) {
      size_t limit = std::min<size_t>(prop.persistingL2CacheMaxSize, wbytes);
      cudaAccessPolicyWindow win = {};
      win.base_ptr = W; win.num_bytes = std::min<size_t>(wbytes, prop.accessPolicyMaxWindowSize);
      win.hitRatio = std::min(1.0f, (float)limit / (float)win.num_bytes);
      win.hitProp = cudaAccessPropertyPersisting; win.missProp = cudaAccessPropertyStreaming;
      CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, mode ? limit : 0));
      CK(cudaCtxResetPersistingL2Cache());
      cudaStreamAttrValue sa = {};
      if (mode == 1) sa.accessPolicyWindow = win;
      CK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &sa));
      gemm(); CK(cudaStreamSynchronize(s));
      cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (int t = 0; t < c.steps; ++t) gemm();
      CK(cudaStreamEndCapture(s, &g));
      size_t nn = 0; CK(cudaGraphGetNodes(g, nullptr, &nn)); std::vector<cudaGraphNode_t> nodes(nn); CK(cudaGraphGetNodes(g, nodes.data(), &nn));
      int inherited = 0;
      for (auto nd : nodes) { cudaGraphNodeType ty; CK(cudaGraphNodeGetType(nd, &ty)); if (ty != cudaGraphNodeTypeKernel) continue;
        cudaKernelNodeAttrValue v = {}; CK(cudaGraphKernelNodeGetAttribute(nd, cudaKernelNodeAttributeAccessPolicyWindow, &v)); if (v.accessPolicyWindow.num_bytes) inherited++;
        if (mode == 2) { cudaKernelNodeAttrValue nv = {}; nv.accessPolicyWindow = win; CK(cudaGraphKernelNodeSetAttribute(nd, cudaKernelNodeAttributeAccessPolicyWindow, &nv)); } }
      cudaGraphExec_t ge; CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
      std::vector<float> ts;
      for (int r = 0; r < 25; ++r) { CK(cudaEventRecord(e0, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 5) ts.push_back(ms); }
      std::sort(ts.begin(), ts.end());
      printf("%-18s mode %d nodes %zu inherited %d limit %zu MiB hitRatio %.2f: %.2f us/step (min %.2f)\n", c.name, mode, nn, inherited, limit >> 20, win.hitRatio, 1000 * ts[ts.size() / 2] / c.steps, 1000 * ts[0] / c.steps);
      cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
    }
    cudaFree(W); cudaFree(A); cudaFree(C);
  }
  return 0;
}
