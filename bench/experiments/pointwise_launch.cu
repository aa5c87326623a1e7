// Experiment (see bench/experiments/README.md): the per-launch cost of the MGU's
// first pointwise kernel ([64 x 1024], 8 partials summed) with scalar, float2
// and float4 loads, and of an empty kernel, as a chain of 200 in a CUDA graph.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/pointwise_launch.cu -o build/exp/pointwise_launch
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { auto e = (x); if (e != 0) { printf("error %d line %d\n", (int)e, __LINE__); return 1; } } while (0)
constexpr int B = 64, N = 1024, S = 8;
__device__ float sig(float x) { return 1.f / (1.f + expf(-x)); }
__global__ void empty() {}
__global__ void scalar(const float *xp, const float *bf, const float *bh, const float *p, const float *h,
                       float *xh, float *f, float *fh) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * N) return;
  int r = i / N, c = i % N;
  float s = 0;
  for (int k = 0; k < S; ++k) s += p[(size_t)k * B * N + i];
  float g = xp[r * 2 * N + c] + bf[c] + s;
  xh[i] = xp[r * 2 * N + N + c] + bh[c];
  float fv = sig(g); f[i] = fv; fh[i] = fv * h[i];
}
template <int V> struct Vec;
template <> struct Vec<4> { using T = float4; };
template <> struct Vec<2> { using T = float2; };
template <int V>
__global__ void wide(const float *xp, const float *bf, const float *bh, const float *p, const float *h,
                     float *xh, float *f, float *fh) {
  using T = typename Vec<V>::T;
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (i >= B * N) return;
  int r = i / N, c = i % N;
  T ps[S];
#pragma unroll
  for (int k = 0; k < S; ++k) ps[k] = *reinterpret_cast<const T *>(p + (size_t)k * B * N + i);
  T a = *reinterpret_cast<const T *>(xp + r * 2 * N + c), b = *reinterpret_cast<const T *>(xp + r * 2 * N + N + c);
  T vbf = *reinterpret_cast<const T *>(bf + c), vbh = *reinterpret_cast<const T *>(bh + c);
  T vh = *reinterpret_cast<const T *>(h + i);
  float *pa = (float *)&a, *pb = (float *)&b, *pbf = (float *)&vbf, *pbh = (float *)&vbh, *ph = (float *)&vh;
  T o1, o2, o3; float *q1 = (float *)&o1, *q2 = (float *)&o2, *q3 = (float *)&o3;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float s = 0;
#pragma unroll
    for (int k = 0; k < S; ++k) s += ((float *)&ps[k])[j];
    float fv = sig(pa[j] + pbf[j] + s);
    q1[j] = pb[j] + pbh[j]; q2[j] = fv; q3[j] = fv * ph[j];
  }
  *reinterpret_cast<T *>(xh + i) = o1; *reinterpret_cast<T *>(f + i) = o2; *reinterpret_cast<T *>(fh + i) = o3;
}
int main() {
  float *xp, *bf, *bh, *p, *h, *xh, *f, *fh;
  CK(cudaMalloc(&xp, 4 * B * 2 * N)); CK(cudaMalloc(&bf, 4 * N)); CK(cudaMalloc(&bh, 4 * N));
  CK(cudaMalloc(&p, 4 * S * B * N)); CK(cudaMalloc(&h, 4 * B * N));
  CK(cudaMalloc(&xh, 4 * B * N)); CK(cudaMalloc(&f, 4 * B * N)); CK(cudaMalloc(&fh, 4 * B * N));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct V { const char *name; int threads, block; int kind; };
  std::vector<V> vs = {{"empty 256 blocks", B * N, 256, 0}, {"scalar 256x256", B * N, 256, 1},
                       {"scalar 512x128", B * N, 128, 1}, {"float2 128x256", B * N / 2, 256, 2},
                       {"float2 256x128", B * N / 2, 128, 2}, {"float4 64x256", B * N / 4, 256, 4},
                       {"float4 128x128", B * N / 4, 128, 4}, {"float4 256x64", B * N / 4, 64, 4}};
  const int L = 200;
  for (int round = 0; round < 3; ++round)
  for (auto &v : vs) {
    cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    int grid = (v.threads + v.block - 1) / v.block;
    for (int l = 0; l < L; ++l) {
      if (v.kind == 0) empty<<<grid, v.block, 0, s>>>();
      if (v.kind == 1) scalar<<<grid, v.block, 0, s>>>(xp, bf, bh, p, h, xh, f, fh);
      if (v.kind == 2) wide<2><<<grid, v.block, 0, s>>>(xp, bf, bh, p, h, xh, f, fh);
      if (v.kind == 4) wide<4><<<grid, v.block, 0, s>>>(xp, bf, bh, p, h, xh, f, fh);
    }
    CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<float> ts;
    for (int r = 0; r < 12; ++r) {
      cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    printf("round %d %-18s %.3f us per launch (chain of %d in a graph)\n", round, v.name, 1000 * ts[ts.size() / 2] / L, L);
    cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  }
  CK(cudaGetLastError());
  return 0;
}
