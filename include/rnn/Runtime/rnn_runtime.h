/*===- rnn_runtime.h - C ABI of compiled rnn models -------------*- C -*-===*\
|*                                                                          *|
|* A model compiled by `rnn-compile` is a shared library. This runtime      *|
|* (librnn_runtime.so) loads it, checks every call's tensors against the    *|
|* model's signature and runs it. Errors come back as status codes with a   *|
|* message; no call aborts the process on bad input.                        *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef RNN_RUNTIME_RNN_RUNTIME_H
#define RNN_RUNTIME_RNN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. RNN_OK is 0; every other code comes with a message readable
 * through rnn_last_error() on the calling thread. */
typedef enum rnn_status {
  RNN_OK = 0,
  RNN_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad count or name */
  RNN_ERROR_SHAPE_MISMATCH = 2,   /* a tensor's rank or sizes are wrong */
  RNN_ERROR_DTYPE_MISMATCH = 3,   /* a tensor's element type is wrong */
  RNN_ERROR_NOT_FOUND = 4,        /* no such function in the model */
  RNN_ERROR_LOAD_FAILED = 5,      /* the library could not be loaded */
  RNN_ERROR_BAD_MODEL = 6,        /* the library is not an rnn model */
  RNN_ERROR_UNSUPPORTED = 7,      /* e.g. a CUDA stream for a CPU model */
  RNN_ERROR_INTERNAL = 8,         /* something that should not happen (a bug) */
  RNN_ERROR_OUT_OF_MEMORY = 9     /* an allocation failed during a call */
} rnn_status;

/* Element types. */
typedef enum rnn_dtype {
  RNN_F32 = 0,
  RNN_F64 = 1,
  RNN_BF16 = 2,
  RNN_F16 = 3,
  RNN_I32 = 4,
  RNN_I64 = 5
} rnn_dtype;

#define RNN_MAX_RANK 8

/* A dense, row-major (C-contiguous) tensor. `data` is a host pointer for CPU
 * models. The caller owns the memory. */
typedef struct rnn_tensor {
  void *data;
  rnn_dtype dtype;
  int32_t rank;
  int64_t shape[RNN_MAX_RANK];
} rnn_tensor;

/* A loaded model. Immutable after loading: concurrent rnn_model_run calls on
 * one model from several threads are safe, each with its own tensors. */
typedef struct rnn_model rnn_model;

/* Loads the model at `path` (a shared library made by rnn-compile). */
rnn_status rnn_model_load(const char *path, rnn_model **model);

/* Unloads a model; null is accepted and ignored. */
void rnn_model_unload(rnn_model *model);

/* The functions a model exports, by index. */
int32_t rnn_model_num_functions(const rnn_model *model);
const char *rnn_model_function_name(const rnn_model *model, int32_t index);

/* The signature of function `name`: counts, then each argument's and each
 * result's dtype, rank and sizes, where a size is -1 when it is dynamic. */
rnn_status rnn_model_signature(const rnn_model *model, const char *name,
                               int32_t *num_args, int32_t *num_results);
rnn_status rnn_model_arg_info(const rnn_model *model, const char *name,
                              int32_t index, rnn_tensor *info);
rnn_status rnn_model_result_info(const rnn_model *model, const char *name,
                                 int32_t index, rnn_tensor *info);

/* Training (docs/training.md). A function `f` compiled with
 * `rnn-compile --training` comes with two more functions of the model:
 *   train_function(f's arguments) -> (f's results, num_saved tensors)
 *   backward_function(f's arguments, f's results, the num_saved tensors,
 *                     one gradient per result of f) -> (num_gradients
 * gradients) where gradient i is that of f's argument gradient_args[i] (every
 * floating-point argument, in order). The pointers stay valid while the
 * model is loaded. A function without them gives RNN_ERROR_NOT_FOUND. */
typedef struct rnn_training_info {
  const char *train_function;
  const char *backward_function;
  int32_t num_saved;
  int32_t num_gradients;
  const int32_t *gradient_args;
} rnn_training_info;
rnn_status rnn_model_training_info(const rnn_model *model, const char *name,
                                   rnn_training_info *info);

/* The shapes (and dtypes) of the results of `name` for these arguments:
 * fills results[i].dtype, .rank and .shape (not .data). Checks the arguments
 * as rnn_model_run does. */
rnn_status rnn_model_result_shapes(const rnn_model *model, const char *name,
                                   const rnn_tensor *args, int32_t num_args,
                                   rnn_tensor *results, int32_t num_results);

/* Runs function `name`: reads `args`, writes `results` (buffers the caller
 * allocated with the shapes rnn_model_result_shapes gives). Checks counts,
 * null pointers, dtypes, ranks, static sizes and that dynamic sizes agree
 * (one batch size, one sequence length) before running anything.
 *
 * CPU models: `stream` must be null; the call returns when the results are
 * written. CUDA models (compiled with --target=cuda): tensors hold device
 * pointers, and `stream` is the CUstream / cudaStream_t to run on (null is
 * CUDA's default stream); the call queues all its work on that stream and
 * returns without waiting, like a PyTorch operation. Errors found while
 * queueing (a failed allocation or launch) return RNN_ERROR_INTERNAL;
 * errors of the kernels themselves surface at the caller's next
 * synchronisation. */
rnn_status rnn_model_run(const rnn_model *model, const char *name,
                         const rnn_tensor *args, int32_t num_args,
                         rnn_tensor *results, int32_t num_results,
                         void *stream);

/* The message of the last error on this thread ("" if none). A successful
 * call does not clear it: the message of the last failure stays until the
 * next failing call on the same thread, and the pointer is valid until then.
 * Test the status, not the message, to see whether a call failed. */
const char *rnn_last_error(void);

/* The name of a status code, e.g. "RNN_ERROR_SHAPE_MISMATCH". */
const char *rnn_status_name(rnn_status status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RNN_RUNTIME_RNN_RUNTIME_H */
