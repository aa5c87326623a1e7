// Experiment: the kernels of a step read the step's rows of the input
// projection ([T, B, 3H], 78 MiB at T = 100, B = 64, H = 1024: more than the
// H100's L2, so each step's rows come from HBM) and the biases after their
// griddepcontrol.wait, on the step's critical path. Nothing in the loop
// writes them: they may be read before the wait, while the grid ahead still
// runs. The GRU with the reset gate first (its two kernels as compiled: the
// first hands on x_z + b_Wz, x_n + b_Wn, h_z + b_Uz and r⊙h; and as written
// by hand: r⊙h and z, biases folded into the projection), each with the
// projection and bias loads after the wait (as compiled) and before it.
// The GEMMs are the runtime's preloaded partials kernel (8 slices each).
// T = 100 steps in a CUDA graph, µs per step (median of 20 replays, three
// rounds), h after 100 steps against the first variant.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/projection_early_loads.cu -o build/exp/projection_early_loads
#include <cuda_runtime.h>
#include <cstdint>
#include <vector>
#include "../../lib/Runtime/Cuda/PreloadedPartialsGemm.cu"
#include "step_harness.cuh"
#include "gru_rb_step.cuh"

// The compiled form. EARLY: the projection and bias loads before the wait.
template <bool EARLY> __global__ void comp1(Bufs b) {
  letNextLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) { gridWait(); return; }
  int r = i / H, j = i % H; const float *x = b.x + r * 3 * H + j;
  float xr, xz, xn, bwr, bwz, bwn, bur, buz;
  auto loads = [&] { xr = x[0]; xz = x[H]; xn = x[2 * H]; bwr = b.bW[j]; bwz = b.bW[H + j]; bwn = b.bW[2 * H + j]; bur = b.bU[j]; buz = b.bU[H + j]; };
  if (EARLY) loads();
  gridWait();
  if (!EARLY) loads();
  float pr = 0, pz = 0;
  for (int s = 0; s < S; ++s) { pr += b.p1[(size_t)s * B * 2 * H + r * 2 * H + j]; pz += b.p1[(size_t)s * B * 2 * H + r * 2 * H + H + j]; }
  b.q1[i] = xz + bwz; b.q2[i] = xn + bwn; b.q3[i] = pz + buz;
  b.rh[i] = sig(xr + bwr + pr + bur) * b.h[i];
}
template <bool EARLY> __global__ void comp2(Bufs b) {
  letNextLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) { gridWait(); return; }
  int j = i % H; float bun = 0;
  if (EARLY) bun = b.bU[2 * H + j];
  gridWait();
  if (!EARLY) bun = b.bU[2 * H + j];
  float pn = 0;
  for (int s = 0; s < S; ++s) pn += b.p2[(size_t)s * B * H + i];
  float z = sig(b.q1[i] + b.q3[i]), nn = tanhf(b.q2[i] + pn + bun);
  float hn = (1 - z) * nn + z * b.h[i]; b.h[i] = hn; b.ys[i] = hn;
}
// The hand-written form (r⊙h and z handed on, biases folded into xb).
template <bool EARLY> __global__ void hand1(Bufs b) {
  letNextLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) { gridWait(); return; }
  int r = i / H, j = i % H; float sr, sz;
  if (EARLY) { sr = b.xb[r * 3 * H + j]; sz = b.xb[r * 3 * H + H + j]; }
  gridWait();
  if (!EARLY) { sr = b.xb[r * 3 * H + j]; sz = b.xb[r * 3 * H + H + j]; }
  for (int s = 0; s < S; ++s) { sr += b.p1[(size_t)s * B * 2 * H + r * 2 * H + j]; sz += b.p1[(size_t)s * B * 2 * H + r * 2 * H + H + j]; }
  b.rh[i] = sig(sr) * b.h[i]; b.z[i] = sig(sz);
}
template <bool EARLY> __global__ void hand2(Bufs b) {
  letNextLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= B * H) { gridWait(); return; }
  int r = i / H, j = i % H; float sn;
  if (EARLY) sn = b.xb[r * 3 * H + 2 * H + j];
  gridWait();
  if (!EARLY) sn = b.xb[r * 3 * H + 2 * H + j];
  for (int s = 0; s < S; ++s) sn += b.p2[(size_t)s * B * H + i];
  float nn = tanhf(sn), z = b.z[i], hn = (1 - z) * nn + z * b.h[i]; b.h[i] = hn; b.ys[i] = hn;
}

int main() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GruRbData d(4);
  CK(cudaFuncSetAttribute(rnn_preloaded_partials_gemm_slice128, cudaFuncAttributeMaxDynamicSharedMemorySize, kRuntimeSlice128Smem));
  auto gemm = [&](const float *W, const float *A, int n, float *C) { runtimePartials128(s, W, A, B, n, S, C); };
  const int Gr = B * H / 256;
  // form: 0 compiled, 1 compiled with early loads, 2 hand-written, 3 hand-written with early loads.
  auto steps = [&](float *h, int form) { CK(cudaMemcpyAsync(h, d.h0, 4 * B * H, cudaMemcpyDeviceToDevice, s));
    for (int t = 0; t < T; ++t) {
      Bufs b = d.step(t, h);
      gemm(d.U, h, 2 * H, d.P1);
      launchEarly(s, Gr, 256, 0, form == 0 ? comp1<false> : form == 1 ? comp1<true> : form == 2 ? hand1<false> : hand1<true>, b);
      gemm(d.U + (size_t)2 * H * H, d.rh, H, d.P2);
      launchEarly(s, Gr, 256, 0, form == 0 ? comp2<false> : form == 1 ? comp2<true> : form == 2 ? hand2<false> : hand2<true>, b);
    } };
  const char *names[] = {"compiled", "compiled, early loads", "hand-written", "hand-written, early loads"};
  std::vector<cudaGraphExec_t> graphs;
  for (int v = 0; v < 4; ++v) graphs.push_back(captureGraph(s, [&, v] { steps(d.hv[v], v); }));
  for (int round = 0; round < 3; ++round) {
    printf("round %d:\n", round);
    for (int v = 0; v < 4; ++v) printf("  %-28s %6.2f us/step\n", names[v], usPerStep(graphs[v], s, T));
  }
  for (auto g : graphs) CK(cudaGraphLaunch(g, s));
  CK(cudaStreamSynchronize(s));
  for (int v = 0; v < 4; ++v) printf("%-28s max abs diff against the first after %d steps: %.2e\n", names[v], T, maxAbsDiff(d.hv[0], d.hv[v], B * H).first);
  return 0;
}
