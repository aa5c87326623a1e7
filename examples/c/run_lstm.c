/*===- run_lstm.c - Run a compiled LSTM from C ----------------------------===*\
|*                                                                          *|
|* Usage: rnn-example-run-lstm MODEL.so                                     *|
|*                                                                          *|
|* Loads a model compiled by rnn-compile from examples/lstm.mlir, reads the *|
|* signature of its function `lstm_seq`, builds the arguments for a         *|
|* sequence of T = 5 steps and a batch of B = 3 from a fixed pseudo-random  *|
|* formula, asks the runtime for the results' shapes, allocates them, runs  *|
|* the function and prints each result's shape and a checksum. Every        *|
|* failing call prints the status name and the runtime's message and exits  *|
|* with 1.                                                                  *|
|*                                                                          *|
|*   rnn-compile examples/lstm.mlir -o lstm.so                              *|
|*   cc -std=c11 -I include examples/c/run_lstm.c -L build/lib              *|
|*      -lrnn_runtime -Wl,-rpath,$PWD/build/lib -o run_lstm                 *|
|*   ./run_lstm lstm.so                                                     *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#include "rnn/Runtime/rnn_runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { T = 5, B = 3, MAX_TENSORS = 16 };
static const char *const FUNCTION = "lstm_seq";

static rnn_model *model;
static rnn_tensor args[MAX_TENSORS], results[MAX_TENSORS];
static int32_t numArgs, numResults;

static void cleanup(void) {
  for (int32_t i = 0; i < MAX_TENSORS; ++i) {
    free(args[i].data);
    free(results[i].data);
  }
  rnn_model_unload(model); /* null is fine */
}

/* On failure: "error: <what>: <status name>: <message>", exit status 1. */
static void check(rnn_status status, const char *what) {
  if (status == RNN_OK)
    return;
  fprintf(stderr, "error: %s: %s: %s\n", what, rnn_status_name(status),
          rnn_last_error());
  cleanup();
  exit(1);
}

static void fail(const char *message) {
  fprintf(stderr, "error: %s\n", message);
  cleanup();
  exit(1);
}

static int64_t numElements(const rnn_tensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d)
    n *= t->shape[d];
  return n;
}

static void printShape(const rnn_tensor *t) {
  printf("[");
  for (int32_t d = 0; d < t->rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
  printf("]");
}

/* A fixed pseudo-random value in (-1, 1), never 0: element `i` of argument
 * `arg`. */
static float value(int32_t arg, int64_t i) {
  uint32_t h = (uint32_t)(arg + 1) * 2654435761u ^ (uint32_t)i * 40503u;
  h = h * 1103515245u + 12345u;
  return (float)(((h >> 8) % 1000) + 0.5) / 500.0f - 1.0f;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.so\n", argv[0]);
    return 1;
  }
  check(rnn_model_load(argv[1], &model), "rnn_model_load");

  check(rnn_model_signature(model, FUNCTION, &numArgs, &numResults),
        "rnn_model_signature");
  if (numArgs > MAX_TENSORS || numResults > MAX_TENSORS)
    fail("lstm_seq has more arguments or results than this program handles");

  /* Each argument's dtype and shape come from the signature; a dynamic size
   * (-1) is T in dim 0 of the sequence ([T, B, I], the only rank-3
   * argument) and B everywhere else (the states [B, H]). The weights have
   * static shapes and are scaled down so that the gates do not saturate. */
  for (int32_t i = 0; i < numArgs; ++i) {
    rnn_tensor *arg = &args[i];
    check(rnn_model_arg_info(model, FUNCTION, i, arg), "rnn_model_arg_info");
    if (arg->dtype != RNN_F32)
      fail("this program fills f32 arguments only");
    int dynamic = 0;
    for (int32_t d = 0; d < arg->rank; ++d)
      if (arg->shape[d] < 0) {
        arg->shape[d] = (arg->rank == 3 && d == 0) ? T : B;
        dynamic = 1;
      }
    int64_t n = numElements(arg);
    float *data = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!data)
      fail("out of memory");
    for (int64_t k = 0; k < n; ++k)
      data[k] = (dynamic ? 1.0f : 0.3f) * value(i, k);
    arg->data = data;
  }

  /* The results' dtypes and shapes for these arguments, then their buffers. */
  check(rnn_model_result_shapes(model, FUNCTION, args, numArgs, results,
                                numResults),
        "rnn_model_result_shapes");
  for (int32_t j = 0; j < numResults; ++j) {
    if (results[j].dtype != RNN_F32)
      fail("this program reads f32 results only");
    int64_t n = numElements(&results[j]);
    results[j].data = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!results[j].data)
      fail("out of memory");
  }

  check(rnn_model_run(model, FUNCTION, args, numArgs, results, numResults,
                      /*stream=*/NULL),
        "rnn_model_run");

  printf("%s: %d arguments, %d results (T = %d, B = %d)\n", FUNCTION,
         (int)numArgs, (int)numResults, T, B);
  double checksum = 0;
  for (int32_t j = 0; j < numResults; ++j) {
    const float *data = results[j].data;
    double sum = 0;
    for (int64_t k = 0; k < numElements(&results[j]); ++k)
      sum += data[k];
    checksum += sum;
    printf("result #%d: f32 ", (int)j);
    printShape(&results[j]);
    printf(" sum %.6f\n", sum);
  }
  printf("checksum %.6f\n", checksum);

  cleanup();
  return 0;
}
