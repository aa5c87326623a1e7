/*===- rnn_cpu_gemm.h - The matrix product of compiled CPU models -*- C -*-===*\
|*                                                                          *|
|* Code that rnn-compile emits for the CPU does its pointwise work itself    *|
|* and calls this function (exported by librnn_runtime.so) for every matrix  *|
|* product, so that the products run in OpenBLAS. It is not meant for       *|
|* people: arguments are plain integers so that the compiler can emit the   *|
|* call without knowing any C types.                                        *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef RNN_RUNTIME_RNN_CPU_GEMM_H
#define RNN_RUNTIME_RNN_CPU_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Values of rnn_cpu_gemm's b_layout. */
#define RNN_GEMM_B_NK 0 /* B is n x k (PyTorch's [out, in]): C = A * B^T */
#define RNN_GEMM_B_KN 1 /* B is k x n: C = A * B */
/* Added to b_layout: accumulate, C += A * op(B). */
#define RNN_GEMM_ACCUMULATE 4
/* Added to b_layout of rnn_cpu_gemm_batched (and rnn_cuda_gemm_batched): A
 * is stored k x m, with lda >= m, and C = A^T * op(B). */
#define RNN_GEMM_A_KM 32

/* C = A * op(B), overwriting C (C's old contents are never read, so it may
 * hold anything, NaNs included), or C += A * op(B) when b_layout includes
 * RNN_GEMM_ACCUMULATE (an f32 or f64 C only).
 *
 * ab_dtype, c_dtype: rnn_dtype values. Supported pairs: (RNN_F32, RNN_F32)
 *   and (RNN_F64, RNN_F64), which call cblas_sgemm and cblas_dgemm; and
 *   (RNN_BF16, RNN_F32), (RNN_F16, RNN_F32), (RNN_BF16, RNN_BF16),
 *   (RNN_F16, RNN_F16), which widen A and B to f32, call cblas_sgemm and,
 *   for a 16-bit C, round the f32 product to nearest, ties to even.
 * a, b, c: addresses of the first elements, as integers.
 * A is m x k, row-major, with leading dimension lda >= k (in elements).
 * B is n x k with ldb >= k (RNN_GEMM_B_NK) or k x n with ldb >= n
 *   (RNN_GEMM_B_KN), row-major.
 * C is m x n, row-major, with ldc >= n.
 * m, n and k may be 0: nothing is written when m or n is 0, and C is set to
 * zeros when k is 0 (left as it is when accumulating).
 *
 * There is no status: the compiler checked the shapes. A call the function
 * cannot perform (an unsupported dtype pair, a b_layout other than 0 or 1
 * (plus RNN_GEMM_ACCUMULATE), accumulation into a 16-bit C, a
 * negative size, a leading dimension smaller than its row, a size above
 * 2^31 - 1 (OpenBLAS's int), or no memory for the 16-bit conversions) leaves
 * C unspecified and records the reason on the calling thread; when the call
 * came from a model run by rnn_model_run on that thread, rnn_model_run then
 * fails with that reason (RNN_ERROR_UNSUPPORTED or RNN_ERROR_INTERNAL). */
void rnn_cpu_gemm(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                  int64_t m, int64_t n, int64_t k, int64_t a, int64_t lda,
                  int64_t b, int64_t ldb, int64_t c, int64_t ldc);

/* The partial products of `slices` consecutive K slices: for s < slices,
 * C_s = A[:, s*k/slices ...] * B[:, s*k/slices ...]^T (B n x k, RNN_GEMM_B_NK)
 * or A[:, s*k/slices ...] * B[s*k/slices ..., :] (B k x n, RNN_GEMM_B_KN),
 * with C_s at c + s * m * ldc elements; one rnn_cpu_gemm per slice. k must be
 * a multiple of `slices` and the accumulate bit clear;
 * otherwise the reason is recorded as for rnn_cpu_gemm. What
 * rnn-compile --k-partials=N emits for the CPU (a check of the rewrite that
 * the CUDA backend uses for speed; the kernel that reads the product adds
 * the partials). */
void rnn_cpu_gemm_partials(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                           int64_t slices, int64_t m, int64_t n, int64_t k,
                           int64_t a, int64_t lda, int64_t b, int64_t ldb,
                           int64_t c, int64_t ldc);

/* `batch` products C_i = op(A_i) * op(B_i), X_i at x + i * stride_x
 * elements, one rnn_cpu_gemm each (with RNN_GEMM_A_KM, A_i is k x m): the
 * head-wise products, one call per gate with the heads as the batch
 * (convert-matmul-to-library-gemm{batched-function}). Failures are recorded
 * as for rnn_cpu_gemm. */
void rnn_cpu_gemm_batched(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                          int64_t batch, int64_t m, int64_t n, int64_t k,
                          int64_t a, int64_t lda, int64_t stride_a, int64_t b,
                          int64_t ldb, int64_t stride_b, int64_t c, int64_t ldc,
                          int64_t stride_c);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RNN_RUNTIME_RNN_CPU_GEMM_H */
