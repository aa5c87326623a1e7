/*===- fake_model.c - A hand-written model for the runtime's tests --------===*\
|*                                                                          *|
|* What rnn-compile would emit, written by hand: a manifest, and one        *|
|* rnn_call_<name> per function that reads MLIR memref descriptors. The     *|
|* functions read their descriptors' sizes, strides and offsets as compiled *|
|* code does, so the test checks what the runtime passes, not just that the *|
|* numbers come out.                                                        *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#include "rnn/Runtime/rnn_cpu_gemm.h"
#include "rnn/Runtime/rnn_runtime.h"

#include <stdint.h>

/* The descriptor of the largest rank used here; lower ranks use a prefix of
 * sizes_strides (sizes, then strides). */
typedef struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes_strides[6];
} Descriptor;

#define SIZE(d, i) ((d)->sizes_strides[(i)])
#define STRIDE(d, rank, i) ((d)->sizes_strides[(rank) + (i)])

/* Symbols are numbered s0, s1 in `mix` in the order opposite to their first
 * use, and `linear` uses s7 alone, so that the runtime's handling of symbol
 * names is exercised and not just the common case. */
const char rnn_manifest[] = "rnn-manifest 1\n"
                            "function axpy 2 1\n"
                            "arg 0 f32 2 s0 4\n"
                            "arg 1 f32 1 4\n"
                            "result 0 f32 2 s0 4\n"
                            "end\n"
                            "function mix 2 2\n"
                            "arg 0 i32 1 s0\n"
                            "arg 1 f64 3 s1 s0 3\n"
                            "result 0 f64 2 s1 3\n"
                            "result 1 i64 0\n"
                            "end\n"
                            "function linear 2 1\n"
                            "arg 0 f32 2 s7 3\n"
                            "arg 1 f32 2 2 3\n"
                            "result 0 f32 2 s7 2\n"
                            "end\n"
                            "function bad_gemm 1 1\n"
                            "arg 0 i32 0\n"
                            "result 0 f32 1 1\n"
                            "end\n";

/* y = 2 x + w, w broadcast over the rows. */
void rnn_call_axpy(void **descriptors) {
  const Descriptor *x = descriptors[0], *w = descriptors[1];
  const Descriptor *y = descriptors[2];
  const float *xData = (const float *)x->aligned + x->offset;
  const float *wData = (const float *)w->aligned + w->offset;
  float *yData = (float *)y->aligned + y->offset;
  for (int64_t i = 0; i < SIZE(x, 0); ++i)
    for (int64_t j = 0; j < SIZE(x, 1); ++j)
      yData[i * STRIDE(y, 2, 0) + j * STRIDE(y, 2, 1)] =
          2.0f * xData[i * STRIDE(x, 2, 0) + j * STRIDE(x, 2, 1)] +
          wData[j * STRIDE(w, 1, 0)];
}

/* y[i][c] = sum_j counts[j] * x[i][j][c]; total = sum_j counts[j] (rank 0:
 * the descriptor is just allocated, aligned and offset). */
void rnn_call_mix(void **descriptors) {
  const Descriptor *counts = descriptors[0], *x = descriptors[1];
  const Descriptor *y = descriptors[2], *total = descriptors[3];
  const int32_t *countData = (const int32_t *)counts->aligned + counts->offset;
  const double *xData = (const double *)x->aligned + x->offset;
  double *yData = (double *)y->aligned + y->offset;
  int64_t sum = 0;
  for (int64_t j = 0; j < SIZE(counts, 0); ++j)
    sum += countData[j * STRIDE(counts, 1, 0)];
  *((int64_t *)total->aligned + total->offset) = sum;
  for (int64_t i = 0; i < SIZE(x, 0); ++i) {
    for (int64_t c = 0; c < SIZE(x, 2); ++c) {
      double acc = 0.0;
      for (int64_t j = 0; j < SIZE(x, 1); ++j)
        acc += countData[j * STRIDE(counts, 1, 0)] *
               xData[i * STRIDE(x, 3, 0) + j * STRIDE(x, 3, 1) +
                     c * STRIDE(x, 3, 2)];
      yData[i * STRIDE(y, 2, 0) + c * STRIDE(y, 2, 1)] = acc;
    }
  }
}

/* y = x w^T through rnn_cpu_gemm, as compiled code does its matmuls. */
void rnn_call_linear(void **descriptors) {
  const Descriptor *x = descriptors[0], *w = descriptors[1];
  const Descriptor *y = descriptors[2];
  rnn_cpu_gemm(RNN_F32, RNN_F32, RNN_GEMM_B_NK, SIZE(x, 0), SIZE(w, 0),
               SIZE(x, 1), (int64_t)((float *)x->aligned + x->offset),
               STRIDE(x, 2, 0), (int64_t)((float *)w->aligned + w->offset),
               STRIDE(w, 2, 0), (int64_t)((float *)y->aligned + y->offset),
               STRIDE(y, 2, 0));
}

/* Calls rnn_cpu_gemm in ways it cannot serve, to test that rnn_model_run
 * reports what the GEMM recorded: mode 0 asks for an unsupported dtype pair,
 * mode 1 for a size OpenBLAS cannot take (nothing is read or written). */
void rnn_call_bad_gemm(void **descriptors) {
  const Descriptor *mode = descriptors[0], *y = descriptors[1];
  float *yData = (float *)y->aligned + y->offset;
  if (*((const int32_t *)mode->aligned + mode->offset) == 0)
    rnn_cpu_gemm(RNN_I32, RNN_I32, RNN_GEMM_B_NK, 1, 1, 1, (int64_t)yData, 1,
                 (int64_t)yData, 1, (int64_t)yData, 1);
  else
    rnn_cpu_gemm(RNN_F32, RNN_F32, RNN_GEMM_B_KN, INT64_C(1) << 31, 1, 1,
                 (int64_t)yData, 1, (int64_t)yData, 1, (int64_t)yData, 1);
}
