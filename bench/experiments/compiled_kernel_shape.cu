// Experiment: why the compiled GRU-reset-before step (about 13.4 µs at
// B = 64, H = 1024 on the H100) is slower than the same step written by
// hand with the same GEMMs (12.2-12.3, preload_gemm.cu), while the compiled
// LSTM step equals its hand-written one. The compiled kernels differ from
// the hand-written ones in three ways, switched on one at a time here:
//  params   the kernels take every buffer as an MLIR memref descriptor
//           (pointer pair, offset, sizes, strides): 62-80 parameters of
//           8 bytes, against 6-7 by hand (here: a 640-byte struct argument);
//  shape    the first kernel hands on four values (x_z + b_Wz, x_n + b_Wn,
//           h_z + b_Uz and r⊙h) and the second computes z, where the
//           hand-written first kernel hands on r⊙h and z;
//  biases   the biases are separate vectors added in the kernels, where the
//           hand-written kernels take a projection with the biases folded in.
// The GEMMs are the runtime's preloaded partials kernel (8 slices each).
// Every variant: T = 100 steps in a CUDA graph, µs per step (median of 20
// replays, three rounds), h after 100 steps against the first variant.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/compiled_kernel_shape.cu -o build/exp/compiled_kernel_shape
#include <cuda_runtime.h>
#include <cstdint>
#include <functional>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
#include "gru_rb_step.cuh"
template <int N> struct Pad { int64_t v[N]; };  // Pad<80>: the size of the compiled first kernel's parameters.
// Hand-written form: first kernel r⊙h and z.
template <int N> __global__ void hand1(Bufs b, Pad<N>) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; float sr = b.xb[r * 3 * H + j], sz = b.xb[r * 3 * H + H + j];
  for (int s = 0; s < S; ++s) { sr += b.p1[(size_t)s * B * 2 * H + r * 2 * H + j]; sz += b.p1[(size_t)s * B * 2 * H + r * 2 * H + H + j]; }
  b.rh[i] = sig(sr) * b.h[i]; b.z[i] = sig(sz);
}
template <int N> __global__ void hand2(Bufs b, Pad<N>) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; float sn = b.xb[r * 3 * H + 2 * H + j];
  for (int s = 0; s < S; ++s) sn += b.p2[(size_t)s * B * H + i];
  float nn = tanhf(sn), z = b.z[i], hn = (1 - z) * nn + z * b.h[i]; b.h[i] = hn; b.ys[i] = hn;
}
// Compiled form: four values handed on, z in the second kernel, biases apart.
template <int N> __global__ void comp1(Bufs b, Pad<N>) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; const float *x = b.x + r * 3 * H + j;
  float pr = 0, pz = 0;
  for (int s = 0; s < S; ++s) { pr += b.p1[(size_t)s * B * 2 * H + r * 2 * H + j]; pz += b.p1[(size_t)s * B * 2 * H + r * 2 * H + H + j]; }
  b.q1[i] = x[H] + b.bW[H + j]; b.q2[i] = x[2 * H] + b.bW[2 * H + j]; b.q3[i] = pz + b.bU[H + j];
  b.rh[i] = sig(x[0] + b.bW[j] + pr + b.bU[j]) * b.h[i];
}
template <int N> __global__ void comp2(Bufs b, Pad<N>) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int j = i % H; float pn = 0;
  for (int s = 0; s < S; ++s) pn += b.p2[(size_t)s * B * H + i];
  float z = sig(b.q1[i] + b.q3[i]), nn = tanhf(b.q2[i] + pn + b.bU[2 * H + j]);
  float hn = (1 - z) * nn + z * b.h[i]; b.h[i] = hn; b.ys[i] = hn;
}
// Biases apart, but the hand-written hand-on (r⊙h, z).
template <int N> __global__ void bias1(Bufs b, Pad<N>) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; const float *x = b.x + r * 3 * H + j;
  float sr = x[0] + b.bW[j] + b.bU[j], sz = x[H] + b.bW[H + j] + b.bU[H + j];
  for (int s = 0; s < S; ++s) { sr += b.p1[(size_t)s * B * 2 * H + r * 2 * H + j]; sz += b.p1[(size_t)s * B * 2 * H + r * 2 * H + H + j]; }
  b.rh[i] = sig(sr) * b.h[i]; b.z[i] = sig(sz);
}
template <int N> __global__ void bias2(Bufs b, Pad<N>) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; float sn = b.x[r * 3 * H + 2 * H + j] + b.bW[2 * H + j] + b.bU[2 * H + j];
  for (int s = 0; s < S; ++s) sn += b.p2[(size_t)s * B * H + i];
  float nn = tanhf(sn), z = b.z[i], hn = (1 - z) * nn + z * b.h[i]; b.h[i] = hn; b.ys[i] = hn;
}
// The hand-written kernels with 7 plain pointer parameters (no struct).
__global__ void slim1(const float *xb, const float *p1, const float *h, float *rh, float *z) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; float sr = xb[r * 3 * H + j], sz = xb[r * 3 * H + H + j];
  for (int s = 0; s < S; ++s) { sr += p1[(size_t)s * B * 2 * H + r * 2 * H + j]; sz += p1[(size_t)s * B * 2 * H + r * 2 * H + H + j]; }
  rh[i] = sig(sr) * h[i]; z[i] = sig(sz);
}
__global__ void slim2(const float *xb, const float *p2, const float *z, float *h, float *ys) {
  triggerAndWait(); int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) return;
  int r = i / H, j = i % H; float sn = xb[r * 3 * H + 2 * H + j];
  for (int s = 0; s < S; ++s) sn += p2[(size_t)s * B * H + i];
  float nn = tanhf(sn), zz = z[i], hn = (1 - zz) * nn + zz * h[i]; h[i] = hn; ys[i] = hn;
}

int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GruRbData d(8);
  CK(cudaFuncSetAttribute(rnn_preloaded_partials_gemm_slice128, cudaFuncAttributeMaxDynamicSharedMemorySize, kRuntimeSlice128Smem));
  auto early = [&](dim3 grid, dim3 block, size_t sm, auto kernel, auto... args) { launchEarly(s, grid, block, sm, kernel, args...); };
  auto gemm = [&](const float *W, const float *A, int n, float *C) { runtimePartials128(s, W, A, B, n, S, C); };
  const int Gr = B * H / 256;
  // form: 0 hand-written hand-on, 1 compiled hand-on (four values), 2 biases apart, 3 seven pointers; pad: Pad<80> or Pad<1>.
  auto steps = [&](float *h, int form, bool padded) { CK(cudaMemcpyAsync(h, d.h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) {
      Bufs b = d.step(t, h);
      auto kernel = [&](int which) {
        if (form == 3) { if (which == 1) early(Gr, 256, 0, slim1, b.xb, b.p1, (const float *)h, d.rh, d.z); else early(Gr, 256, 0, slim2, b.xb, b.p2, (const float *)d.z, h, b.ys); return; }
        if (padded) { Pad<80> p = {}; auto k = which == 1 ? (form == 0 ? hand1<80> : form == 1 ? comp1<80> : bias1<80>) : (form == 0 ? hand2<80> : form == 1 ? comp2<80> : bias2<80>); early(Gr, 256, 0, k, b, p); }
        else { Pad<1> p = {}; auto k = which == 1 ? (form == 0 ? hand1<1> : form == 1 ? comp1<1> : bias1<1>) : (form == 0 ? hand2<1> : form == 1 ? comp2<1> : bias2<1>); early(Gr, 256, 0, k, b, p); } };
      gemm(d.U, h, 2 * H, d.P1); kernel(1);
      gemm(d.U + (size_t)2 * H * H, d.rh, H, d.P2); kernel(2);
    } };
  struct Variant { const char *name; cudaGraphExec_t graph; float *h; };
  struct Form { const char *name; int form; bool padded; };
  const Form forms[] = {{"hand, 5 pointers", 3, false}, {"hand, struct", 0, false}, {"hand, struct + 640 B", 0, true},
                        {"biases apart, struct", 2, false}, {"compiled hand-on, struct", 1, false}, {"compiled hand-on, struct + 640 B", 1, true}};
  std::vector<Variant> vs;
  for (int v = 0; v < 6; ++v) vs.push_back({forms[v].name, captureGraph(s, [&, v] { steps(d.hv[v], forms[v].form, forms[v].padded); }), d.hv[v]});
  for (int round = 0; round < 3; ++round) {
    printf("round %d:\n", round);
    for (auto &v : vs) printf("  %-30s %6.2f us/step\n", v.name, usPerStep(v.graph, s, T));
  }
  for (auto &v : vs) CK(cudaGraphLaunch(v.graph, s));
  CK(cudaStreamSynchronize(s));
  for (auto &v : vs) printf("%-30s max abs diff against the first after %d steps: %.2e\n", v.name, T, maxAbsDiff(vs[0].h, v.h, B * H).first);
  return 0;
}
