// What the GRU-reset-before step experiments share (include it after
// step_harness.cuh): the `medium` shape, the buffers a step's two kernels
// read and write, and their random contents. The projection X is [T, B, 3H]
// without biases (78 MiB: more than L2, as in the compiled model); XB is X
// with the biases folded in (bU only for r and z, as the compiled form adds
// it there).
#pragma once
#include <vector>

constexpr int B = 64, H = 1024, T = 100, S = 8;

// One step's view: x, xb its rows of the projection, p1, p2 the two
// products' K-slice partials, q1..q3 the values the compiled first kernel
// hands on, ys its row of the output sequence.
struct Bufs { const float *x, *xb, *bW, *bU, *p1, *p2; float *h, *rh, *z, *q1, *q2, *q3, *ys; };

struct GruRbData {
  float *U, *X, *XB, *bW, *bU, *P1, *P2, *h0, *rh, *z, *q[3], *ys;
  std::vector<float *> hv; // One final state per variant.

  explicit GruRbData(int variants) : hv(variants) {
    CK(cudaMalloc(&U, 4 * 3 * H * H)); CK(cudaMalloc(&X, 4 * (size_t)T * B * 3 * H)); CK(cudaMalloc(&XB, 4 * (size_t)T * B * 3 * H));
    CK(cudaMalloc(&bW, 4 * 3 * H)); CK(cudaMalloc(&bU, 4 * 3 * H));
    CK(cudaMalloc(&P1, 4 * S * B * 2 * H)); CK(cudaMalloc(&P2, 4 * S * B * H));
    CK(cudaMalloc(&h0, 4 * B * H)); CK(cudaMalloc(&rh, 4 * B * H)); CK(cudaMalloc(&z, 4 * B * H)); CK(cudaMalloc(&ys, 4 * (size_t)T * B * H));
    for (auto &p : q) CK(cudaMalloc(&p, 4 * B * H));
    for (auto &p : hv) CK(cudaMalloc(&p, 4 * B * H));
    fill<<<3 * H * H / 256, 256>>>(U, 3 * H * H, 0.06f, 1); fill<<<T * B * 3 * H / 256, 256>>>(X, (size_t)T * B * 3 * H, 2.f, 2);
    fill<<<B * H / 256, 256>>>(h0, B * H, 1.f, 3); fill<<<12, 256>>>(bW, 3 * H, 0.5f, 4); fill<<<12, 256>>>(bU, 3 * H, 0.5f, 5);
    CK(cudaDeviceSynchronize());
    std::vector<float> x((size_t)T * B * 3 * H), w(3 * H), u(3 * H);
    CK(cudaMemcpy(x.data(), X, 4 * x.size(), cudaMemcpyDeviceToHost)); CK(cudaMemcpy(w.data(), bW, 4 * w.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(u.data(), bU, 4 * u.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < x.size(); ++i) { int c = i % (3 * H); x[i] += w[c] + u[c]; }
    CK(cudaMemcpy(XB, x.data(), 4 * x.size(), cudaMemcpyHostToDevice));
  }

  // Step t's view, the state in `h`.
  Bufs step(int t, float *h) const {
    size_t xo = (size_t)t * B * 3 * H;
    return {X + xo, XB + xo, bW, bU, P1, P2, h, rh, z, q[0], q[1], q[2], ys + (size_t)t * B * H};
  }
};
