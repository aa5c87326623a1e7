/*===- rnn_cuda_runtime.h - What CUDA models call ---------------*- C -*-===*\
|*                                                                          *|
|* librnn_runtime_cuda.so: the functions that code compiled by              *|
|* `rnn-compile --target=cuda` calls (MLIR's mgpu* GPU runtime ABI, and     *|
|* rnn_cuda_gemm), plus the two hooks librnn_runtime uses to run            *|
|* a CUDA model on the caller's stream and to collect its errors.           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef RNN_RUNTIME_RNN_CUDA_RUNTIME_H
#define RNN_RUNTIME_RNN_CUDA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stream the calling thread's next model call runs on (a CUstream or
 * cudaStream_t; null is CUDA's default stream). Every kernel, allocation,
 * copy and GEMM of the call is ordered on it, and the call does not wait
 * for the work to finish. It also reads the environment settings
 * RNN_CUDA_OVERLAP_LAUNCHES, RNN_CUDA_PACKED_GEMM, RNN_CUDA_GEMV,
 * RNN_CUDA_PRELOADED_GEMM, RNN_CUDA_CUBLAS_WORKSPACE_MIB and
 * RNN_CUDA_GEMM_CANDIDATE for the thread's work from then on (every model
 * call sets its stream first). */
void rnn_cuda_set_stream(void *stream);

/* Copies the first CUDA error recorded on this thread since the last call
 * (or while loading kernels) into `buffer` and clears it. Returns 2 if it
 * was a failed allocation (CUDA_ERROR_OUT_OF_MEMORY, or cuBLAS's
 * CUBLAS_STATUS_ALLOC_FAILED), 1 for any other error, 0 if there was none.
 * Once an error is recorded, the rest of the call's work (kernels, GEMMs,
 * copies, allocations) is not queued; frees still are. */
int32_t rnn_cuda_take_error(char *buffer, size_t size);

/* Runs `call(descriptors)` (a model's rnn_call_<name>) on `stream`. On a
 * stream other than the legacy default one, and unless the environment sets
 * RNN_CUDA_GRAPHS=0, the first call with a new `key` (the function, the
 * buffers and the shapes) is captured into a CUDA graph and later calls
 * replay it with one launch; until cuBLAS has run a GEMM on the calling
 * thread outside a capture, the first call runs directly and the second is
 * captured. Unless RNN_CUDA_CUBLAS_WORKSPACE_MIB pins the
 * size of the cuBLAS workspace that a call's GEMMs share (allocated on the
 * stream for the call's duration; 0 leaves it to cuBLAS, as calls without a
 * graph do), the capturing call is captured once per candidate size, each
 * graph is replayed a few times (the call waits for them), with kernels
 * launched early (unless RNN_CUDA_OVERLAP_LAUNCHES=0) and in plain stream
 * order, and the first of these, early launch and smaller sizes first, that
 * is about as fast as the fastest is kept. That one is then captured again
 * with its per-step GEMMs (RNN_GEMM_PER_STEP, and the K-split partials) on
 * each of the first four algorithms of cuBLASLt's heuristic and replayed in
 * alternation with it; cuBLAS's own pick stays unless one is more than 1%
 * faster. RNN_CUDA_GEMM_CANDIDATE=K (0-3) pins candidate K (-1: cuBLAS's
 * pick); calls without a graph use cuBLAS's pick unless pinned. Other
 * threads' calls go on while a call is captured and tuned; one with the same
 * key meanwhile runs directly. Returns 1 if a CUDA error was recorded (read
 * it with rnn_cuda_take_error). */
int32_t rnn_cuda_call(void *stream, void (*call)(void **), void **descriptors,
                      const char *key, size_t key_size);

/* Drops the graphs whose key starts with `prefix` (a model being unloaded:
 * its graphs refer to its kernels). */
void rnn_cuda_release_graphs(const char *prefix, size_t size);

/* Lets the calling thread's next kernel launch (mgpuLaunchKernel) be
 * scheduled before the work ahead of it on the stream has finished
 * (programmatic dependent launch, sm_90 and later). Only for kernels that
 * execute griddepcontrol.wait before touching memory: code compiled by
 * rnn-compile --target=cuda calls it before each of its kernels (pass
 * overlap-kernel-launches). It is a no-op right after a GEMM that cuBLAS
 * ran with bf16 or f16 data (launching early after those made steps
 * slower). The environment variable
 * RNN_CUDA_OVERLAP_LAUNCHES=0 turns it into a no-op; it is read at the
 * start of every model call (rnn_cuda_call), and graphs captured with and
 * without it are kept apart. */
void rnn_cuda_overlap_next_launch(void);

/* Makes the calling thread's next grid that could launch early (a kernel
 * announced by rnn_cuda_overlap_next_launch, or a GEMM on the runtime's own
 * kernels) wait for everything before it on the stream instead. Code
 * compiled by rnn-compile --target=cuda calls it before a time loop whose
 * kernels read, before their griddepcontrol.wait, buffers the loop never
 * writes (pass overlap-kernel-launches): whatever wrote them before the
 * loop has then completed when any of the loop's grids starts. The start
 * of every model call orders the same way. */
void rnn_cuda_order_next_launch(void);

/* Lanes of a layer wavefront (pass rnn-layer-wavefront): the work the
 * calling thread issues between rnn_cuda_lane_begin(lane, after) and
 * rnn_cuda_lane_end(lane) goes to a stream of the thread's own for `lane`
 * (0 to 15) instead of the call's stream. The lane's stream first waits for
 * everything the call's stream held when the first lane began, and each
 * begin also waits for lane `after`'s work up to its last
 * rnn_cuda_lane_end (`after` < 0: for no other lane). Each lane has a cuBLAS
 * workspace of its own. rnn_cuda_lanes_join() makes the call's stream wait
 * for every lane begun since the first. Under stream capture the lanes are
 * concurrent branches of the graph. RNN_CUDA_LANES=0 (read at the start of
 * every model call; graphs captured with and without it are kept apart)
 * leaves every lane's work on the call's stream, in program order. */
void rnn_cuda_lane_begin(int64_t lane, int64_t after);
void rnn_cuda_lane_end(int64_t lane);
void rnn_cuda_lanes_join(void);

/* Marks the calling thread's next cluster launch (mgpuLaunchClusterKernel)
 * as a persistent kernel, whose blocks wait for each other every step: the
 * runtime launches it only if all its blocks fit on the GPU at once
 * (cuOccupancyMaxActiveClusters) and RNN_CUDA_PERSISTENT is not 0 (read at
 * the start of every model call; graphs captured with and without it are
 * kept apart). Otherwise nothing is launched and
 * rnn_cuda_take_refused_launch() returns 1, after which the code compiled
 * by rnn-compile runs the recurrence step by step instead. */
void rnn_cuda_require_resident_next_launch(void);
/* How many batch tiles a grid-wide persistent kernel of `blocks_per_tile`
 * blocks (one a multiprocessor; the tiles' blocks never wait for each
 * other) may run side by side: the device's multiprocessors over
 * blocks_per_tile, at least 1, at most RNN_CUDA_BATCH_TILES where that is
 * set (a whole number from 1 to 1024, read at the start of every model
 * call, which fails on any other value; graphs captured under each value
 * are kept apart); 1 on a lane of a wavefront
 * (rnn_cuda_lane_begin), whose kernels run beside other lanes'. The code
 * compiled by rnn-compile splits the batch into that many tiles, or fewer where
 * the batch has fewer rows; whether they all fit at once is still checked at
 * the launch. */
int32_t rnn_cuda_persistent_batch_tiles(int32_t blocks_per_tile);
/* 1 if a grid-wide persistent kernel's small batch tiles may exchange its
 * staged vector through the low-latency buffer (each block's values as
 * words that carry their step, polled by the other blocks), 0 if every
 * tile goes through the step counter and bulk copies: RNN_CUDA_LOW_LATENCY=0
 * (read at the start of every model call; graphs captured with and without
 * it are kept apart), for comparisons. */
int32_t rnn_cuda_persistent_low_latency(void);
/* 1 if the launch marked by rnn_cuda_require_resident_next_launch was
 * refused (and clears it), else 0. */
int32_t rnn_cuda_take_refused_launch(void);

/* 1 unless RNN_CUDA_PERSISTENT is 0 for the calling thread's model call:
 * the code compiled by rnn-compile runs a recurrence it made a block kernel
 * of (convert-step-loops-to-block-kernels) step by step when it is 0. */
int32_t rnn_cuda_persistent_enabled(void);

/* Added to b_layout by rnn-compile --target=cuda: B is a weight that stays
 * unchanged for the whole model call. */
#define RNN_GEMM_B_CONSTANT 8

/* Added to b_layout by rnn-compile --target=cuda: the product runs once per
 * time step (it is inside the scan's loop). */
#define RNN_GEMM_PER_STEP 16

/* C = A * op(B) on the current stream, with the arguments of rnn_cpu_gemm;
 * `b_layout` bit 0 is the layout (0: B is n x k, 1: k x n), bit 1 allows
 * TF32 tensor-core arithmetic for f32 operands, bit 2
 * (RNN_GEMM_ACCUMULATE) makes it C += A * op(B) and bit 3
 * (RNN_GEMM_B_CONSTANT) says that B's contents do not change until the
 * model call ends, bit 4 (RNN_GEMM_PER_STEP) that the product runs once per
 * time step (a captured call may then run it on another algorithm of
 * cuBLASLt's heuristic, see rnn_cuda_call). Pointers are device addresses.
 *
 * cuBLAS runs the products, except two kinds. First, inside a model call
 * (rnn_cuda_call) on sm_90 or later, an f32 product of a time step
 * (RNN_GEMM_PER_STEP) that allows TF32 with a
 * constant B (n x k or k x n) of at least 90% of the GPU's L2 cache, at
 * most 32 rows, n a multiple of 128, k a multiple of 128 * S for an S of 8,
 * 4 or 2 such that the n / 128 clusters of S blocks all run on the GPU at
 * once, and a 16-byte aligned A runs on the runtime's own kernel: B is rounded to TF32 and
 * packed in 20 bits per weight on its first use in the call (n * k * 2.5
 * bytes, freed when the call ends), and every product with it reads the
 * packed copy (docs/cuda.md). Second, on sm_90 or
 * later, a product of at most 8 rows with f32, bf16 or f16 A and B, an
 * n x k B, an f32 C, k at most 2048, 16-byte aligned A and B, and k, lda
 * and ldb multiples of 16 bytes' worth of elements runs on the runtime's
 * GEMV kernel (sums in f32; no TF32 rounding for f32 operands) unless the
 * first kind applies, launched so that it overlaps the launch of the kernel
 * before it and lets the next one launch early (RNN_CUDA_GEMV=0, read per
 * model call, keeps these on cuBLAS). */
void rnn_cuda_gemm(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                   int64_t m, int64_t n, int64_t k, int64_t a, int64_t lda,
                   int64_t b, int64_t ldb, int64_t c, int64_t ldc);

/* Added to b_layout by convert-matmul-to-library-gemm for
 * rnn_cuda_gemm_batched: A is stored k x m (its transpose is multiplied;
 * the value of rnn_cpu_gemm.h). */
#ifndef RNN_GEMM_A_KM
#define RNN_GEMM_A_KM 32
#endif

/* `batch` products C_i = op(A_i) * op(B_i) on the current stream, X_i at
 * x + i * stride_x elements: the head-wise products, one call per gate
 * (convert-matmul-to-library-gemm{batched-function}). `b_layout` is
 * rnn_cuda_gemm's, plus RNN_GEMM_A_KM for an A stored k x m (lda at least
 * m); the accumulate bit adds to every C_i. One cuBLAS strided-batched GEMM
 * (on a cuBLASLt candidate in a tuned graph for a per-step product with an
 * m x k A). */
void rnn_cuda_gemm_batched(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                           int64_t batch, int64_t m, int64_t n, int64_t k,
                           int64_t a, int64_t lda, int64_t stride_a, int64_t b,
                           int64_t ldb, int64_t stride_b, int64_t c,
                           int64_t ldc, int64_t stride_c);

/* The partial products of `slices` consecutive K slices on the current
 * stream: for s < slices, C_s = A[:, s*k/slices ...] * B[:, s*k/slices ...]^T
 * (B n x k) or A[:, s*k/slices ...] * B[s*k/slices ..., :] (B k x n,
 * RNN_GEMM_B_KN) with C_s at c + s * m * ldc elements. The arguments are
 * those of rnn_cuda_gemm plus `slices`; k must be a multiple of `slices` and
 * the accumulate bit clear (an error is recorded otherwise). The kernel
 * that reads the product adds the partials
 * (convert-matmul-to-library-gemm{k-partials}).
 *
 * The partials of an f32 product of a time step that allows TF32, with a
 * constant B, run on
 * the packed kernel of rnn_cuda_gemm where it applies to the product with
 * S = `slices` K parts, any number whose n / 128 * S blocks fit on the GPU
 * at once (each block writes its K part as a slice; no cluster). Otherwise, on sm_90 or
 * later, f32 A, B and C with TF32 allowed, a constant n x k B
 * (RNN_GEMM_B_CONSTANT), at most 64 rows, slices of 128, 256 or 512
 * values of K (at most 65535 slices), n at most 2^30, 16-byte aligned A and
 * B, lda and ldb multiples of 4 (and at least k), and ldc at least n run
 * on the runtime's own kernel: launched early (as rnn_cuda_overlap_next_launch
 * allows a kernel, and only once the model call has issued work in plain
 * stream order, such as a cuBLAS GEMM or a copy, so that nothing from before
 * the call still runs), each block loads its tile of B into registers
 * before it waits for the work ahead of it, so a step's kernel -> GEMM edge
 * no longer pays a launch and a weight read (RNN_CUDA_PRELOADED_GEMM=0, read
 * per model call, keeps them on cuBLAS). Otherwise one cuBLAS strided-batched
 * GEMM runs them (on a cuBLASLt candidate in a tuned graph, see rnn_cuda_call).
 */
void rnn_cuda_gemm_partials(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                            int64_t slices, int64_t m, int64_t n, int64_t k,
                            int64_t a, int64_t lda, int64_t b, int64_t ldb,
                            int64_t c, int64_t ldc);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RNN_RUNTIME_RNN_CUDA_RUNTIME_H */
