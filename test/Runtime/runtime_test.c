/*===- runtime_test.c - rnn-runtime-test: librnn_runtime end to end -------===*\
|*                                                                          *|
|* Usage: rnn-runtime-test MODEL NOT_A_LIBRARY [BROKEN_MODEL...]            *|
|*   MODEL          librnn_test_fake_model.so (fake_model.c)                *|
|*   NOT_A_LIBRARY  any file that is not a shared library                   *|
|*   BROKEN_MODEL   librnn_test_broken_<case>.so (broken_model.c); every    *|
|*                  case the test knows must be given                       *|
|*                                                                          *|
|* Written in C, as the runtime's users are, against the public headers     *|
|* only. Prints one PASS or FAIL line per check, with the runtime's message *|
|* where there is one, and exits with 1 if any check failed.                *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#include "rnn/Runtime/rnn_cpu_gemm.h"
#include "rnn/Runtime/rnn_runtime.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int numChecks, numFailures;

static void check(int ok, const char *format, ...) {
  va_list args;
  ++numChecks;
  if (!ok)
    ++numFailures;
  printf("%s: ", ok ? "PASS" : "FAIL");
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  printf("\n");
}

static void section(const char *name) { printf("== %s\n", name); }

/* Checks a call's status and that the thread's message contains each of the
 * NULL-terminated strings after `want`. */
static void expectErrorV(const char *what, rnn_status got, rnn_status want,
                         ...) {
  const char *message = rnn_last_error();
  const char *missing = NULL;
  va_list args;
  va_start(args, want);
  for (const char *part = va_arg(args, const char *); part;
       part = va_arg(args, const char *))
    if (!missing && !strstr(message, part))
      missing = part;
  va_end(args);
  check(got == want && !missing, "%s -> %s (want %s): %s%s%s%s", what,
        rnn_status_name(got), rnn_status_name(want), message,
        missing ? " [the message lacks '" : "", missing ? missing : "",
        missing ? "']" : "");
}
#define EXPECT_ERROR(what, call, want, ...)                                    \
  expectErrorV(what, call, want, __VA_ARGS__, (const char *)NULL)

static void expectOk(const char *what, rnn_status got) {
  check(got == RNN_OK, "%s -> %s%s%s", what, rnn_status_name(got),
        got == RNN_OK ? "" : ": ", got == RNN_OK ? "" : rnn_last_error());
}

static rnn_tensor makeTensor(void *data, rnn_dtype dtype, int32_t rank,
                             const int64_t *shape) {
  rnn_tensor tensor;
  memset(&tensor, 0, sizeof(tensor));
  tensor.data = data;
  tensor.dtype = dtype;
  tensor.rank = rank;
  for (int32_t d = 0; d < rank && d < RNN_MAX_RANK; ++d)
    tensor.shape[d] = shape[d];
  return tensor;
}
#define TENSOR(data, dtype, ...)                                               \
  makeTensor(data, dtype,                                                      \
             (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
             (int64_t[]){__VA_ARGS__})
#define SCALAR(data, dtype) makeTensor(data, dtype, 0, NULL)

static int sameShape(const rnn_tensor *tensor, rnn_dtype dtype, int32_t rank,
                     const int64_t *shape) {
  if (tensor->dtype != dtype || tensor->rank != rank)
    return 0;
  for (int32_t d = 0; d < rank; ++d)
    if (tensor->shape[d] != shape[d])
      return 0;
  return 1;
}

/*===----------------------------------------------------------------------===*
 * Loading
 *===----------------------------------------------------------------------===*/

static void testLoadErrors(const char *modelPath, const char *notALibrary) {
  section("load errors");
  rnn_model *model = (rnn_model *)&model; /* must come back null */
  EXPECT_ERROR("load a null path", rnn_model_load(NULL, &model),
               RNN_ERROR_INVALID_ARGUMENT, "path is null");
  check(model == NULL, "a failed load sets *model to null");
  EXPECT_ERROR("load into a null model pointer",
               rnn_model_load(modelPath, NULL), RNN_ERROR_INVALID_ARGUMENT,
               "rnn_model_load", "null");
  EXPECT_ERROR("load a missing file",
               rnn_model_load("/nonexistent-dir/model.so", &model),
               RNN_ERROR_LOAD_FAILED, "/nonexistent-dir/model.so",
               "No such file");
  EXPECT_ERROR("load a file that is not a library",
               rnn_model_load(notALibrary, &model), RNN_ERROR_LOAD_FAILED,
               notALibrary, "ELF");
  /* dlopen would find libm.so.6 in the system's paths; a model path is a
   * file, so the runtime must not. */
  EXPECT_ERROR("load a bare library name that is not in the directory",
               rnn_model_load("libm.so.6", &model), RNN_ERROR_LOAD_FAILED,
               "libm.so.6");
  check(model == NULL, "*model is still null after failed loads");

  /* ...and a bare name is a file in the current directory. */
  char cwd[4096];
  const char *slash = strrchr(modelPath, '/');
  if (slash && getcwd(cwd, sizeof(cwd))) {
    char dir[4096];
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - modelPath), modelPath);
    if (chdir(dir) == 0) {
      expectOk("load a model by a bare file name in the current directory",
               rnn_model_load(slash + 1, &model));
      rnn_model_unload(model);
      model = NULL;
      check(chdir(cwd) == 0, "return to the working directory");
    } else {
      check(0, "chdir to %s", dir);
    }
  }
}

typedef struct BrokenCase {
  const char *name;
  const char *needles[3];
  int seen;
} BrokenCase;

static BrokenCase brokenCases[] = {
    {"no_manifest", {"exports no rnn_manifest"}, 0},
    {"bad_version", {"line 1", "version 2"}, 0},
    {"bad_header", {"line 1", "rnn-manifest 1"}, 0},
    {"bad_dtype", {"line 3", "unknown dtype 'f128'"}, 0},
    {"bad_rank", {"line 3", "bad rank '9'"}, 0},
    {"size_count", {"line 3", "rank 2 needs 2 sizes, found 1"}, 0},
    {"bad_size", {"line 3", "bad size 's-1'"}, 0},
    {"negative_size", {"line 3", "bad size '-3'"}, 0},
    {"bad_index", {"line 3", "expected 'arg 0"}, 0},
    {"no_end", {"line 5", "expected 'end'"}, 0},
    {"truncated", {"ends inside function 'f'"}, 0},
    {"duplicate", {"line 6", "'f' is listed twice"}, 0},
    {"bad_name", {"line 2", "'f-g' is not a C identifier"}, 0},
    {"missing_call", {"'ghost'", "exports no rnn_call_ghost"}, 0},
    {"unbound_symbol", {"'f' result #0 dim 1", "s1", "no argument binds"}, 0},
    {"not_terminated", {"not NUL-terminated", "14 bytes"}, 0},
    {"training_line", {"line 5", "expected 'training <forward>"}, 0},
    {"training_arg", {"line 5", "'5' is not an argument of function 'f'"}, 0},
    {"training_unknown",
     {"training record of function 'f'", "does not list"},
     0},
    {"training_mismatch",
     {"training record of function 'f'", "does not fit the signature of 'f'"},
     0},
};
#define NUM_BROKEN_CASES (int)(sizeof(brokenCases) / sizeof(brokenCases[0]))

static void testBrokenModels(int count, char **paths) {
  section("broken models");
  for (int i = 0; i < count; ++i) {
    const char *base = strrchr(paths[i], '/');
    base = base ? base + 1 : paths[i];
    const char *prefix = "librnn_test_broken_";
    BrokenCase *found = NULL;
    for (int c = 0; c < NUM_BROKEN_CASES; ++c) {
      size_t length = strlen(brokenCases[c].name);
      if (strncmp(base, prefix, strlen(prefix)) == 0 &&
          strncmp(base + strlen(prefix), brokenCases[c].name, length) == 0 &&
          strcmp(base + strlen(prefix) + length, ".so") == 0)
        found = &brokenCases[c];
    }
    if (!found) {
      check(0, "%s is not a broken model case this test knows", paths[i]);
      continue;
    }
    found->seen = 1;
    rnn_model *model = NULL;
    char what[256];
    snprintf(what, sizeof(what), "load broken model '%s'", found->name);
    expectErrorV(what, rnn_model_load(paths[i], &model), RNN_ERROR_BAD_MODEL,
                 paths[i], found->needles[0], found->needles[1],
                 found->needles[2], (const char *)NULL);
    check(model == NULL, "no model from broken model '%s'", found->name);
  }
  for (int c = 0; c < NUM_BROKEN_CASES; ++c)
    if (!brokenCases[c].seen)
      check(0, "broken model case '%s' was not given", brokenCases[c].name);
}

/*===----------------------------------------------------------------------===*
 * The happy path
 *===----------------------------------------------------------------------===*/

static void testIntrospection(const rnn_model *model) {
  section("introspection");
  static const char *const names[] = {"axpy", "mix", "linear", "bad_gemm"};
  check(rnn_model_num_functions(model) == 4, "4 functions (got %d)",
        rnn_model_num_functions(model));
  for (int32_t i = 0; i < 4; ++i) {
    const char *name = rnn_model_function_name(model, i);
    check(name && strcmp(name, names[i]) == 0, "function %d is %s (got %s)", i,
          names[i], name ? name : "null");
  }
  check(rnn_model_function_name(model, 4) == NULL, "no function #4");
  check(rnn_model_function_name(model, -1) == NULL, "no function #-1");
  check(rnn_model_num_functions(NULL) == 0, "a null model has 0 functions");
  static const char *const statusNames[] = {"RNN_OK",
                                            "RNN_ERROR_INVALID_ARGUMENT",
                                            "RNN_ERROR_SHAPE_MISMATCH",
                                            "RNN_ERROR_DTYPE_MISMATCH",
                                            "RNN_ERROR_NOT_FOUND",
                                            "RNN_ERROR_LOAD_FAILED",
                                            "RNN_ERROR_BAD_MODEL",
                                            "RNN_ERROR_UNSUPPORTED",
                                            "RNN_ERROR_INTERNAL",
                                            "RNN_ERROR_OUT_OF_MEMORY"};
  for (int s = 0; s <= RNN_ERROR_OUT_OF_MEMORY; ++s)
    check(strcmp(rnn_status_name((rnn_status)s), statusNames[s]) == 0,
          "rnn_status_name(%d) is %s", s, rnn_status_name((rnn_status)s));
  check(strcmp(rnn_status_name((rnn_status)99), "RNN_STATUS_UNKNOWN") == 0,
        "rnn_status_name(99) is RNN_STATUS_UNKNOWN");
  check(rnn_model_function_name(NULL, 0) == NULL,
        "a null model has no function names");

  int32_t numArgs = -1, numResults = -1;
  expectOk("signature of mix",
           rnn_model_signature(model, "mix", &numArgs, &numResults));
  check(numArgs == 2 && numResults == 2, "mix takes 2 and returns 2 (%d, %d)",
        numArgs, numResults);

  rnn_tensor info;
  expectOk("arg_info mix #1", rnn_model_arg_info(model, "mix", 1, &info));
  check(info.data == NULL &&
            sameShape(&info, RNN_F64, 3, (const int64_t[]){-1, -1, 3}),
        "mix arg #1 is f64 [-1, -1, 3]");
  expectOk("arg_info axpy #1", rnn_model_arg_info(model, "axpy", 1, &info));
  check(sameShape(&info, RNN_F32, 1, (const int64_t[]){4}),
        "axpy arg #1 is f32 [4]");
  expectOk("result_info mix #1", rnn_model_result_info(model, "mix", 1, &info));
  check(sameShape(&info, RNN_I64, 0, NULL), "mix result #1 is i64 []");
  expectOk("result_info linear #0",
           rnn_model_result_info(model, "linear", 0, &info));
  check(sameShape(&info, RNN_F32, 2, (const int64_t[]){-1, 2}),
        "linear result #0 is f32 [-1, 2]");

  float x[20], w[4];
  rnn_tensor args[2] = {TENSOR(x, RNN_F32, 5, 4), TENSOR(w, RNN_F32, 4)};
  rnn_tensor results[2];
  expectOk("result_shapes axpy for x [5, 4]",
           rnn_model_result_shapes(model, "axpy", args, 2, results, 1));
  check(sameShape(&results[0], RNN_F32, 2, (const int64_t[]){5, 4}),
        "axpy returns f32 [5, 4]");

  int32_t counts[2];
  double mx[18];
  rnn_tensor mixArgs[2] = {TENSOR(counts, RNN_I32, 2),
                           TENSOR(mx, RNN_F64, 3, 2, 3)};
  expectOk("result_shapes mix for counts [2], x [3, 2, 3]",
           rnn_model_result_shapes(model, "mix", mixArgs, 2, results, 2));
  check(sameShape(&results[0], RNN_F64, 2, (const int64_t[]){3, 3}) &&
            sameShape(&results[1], RNN_I64, 0, NULL),
        "mix returns f64 [3, 3] and i64 []");
}

static void testRuns(const rnn_model *model) {
  section("runs");
  float x[12], w[4] = {0.5f, -1.0f, 2.0f, 0.0f}, y[12];
  for (int i = 0; i < 12; ++i)
    x[i] = (float)i - 3.5f;
  rnn_tensor args[2] = {TENSOR(x, RNN_F32, 3, 4), TENSOR(w, RNN_F32, 4)};
  rnn_tensor result = TENSOR(y, RNN_F32, 3, 4);
  expectOk("run axpy", rnn_model_run(model, "axpy", args, 2, &result, 1, NULL));
  int ok = 1;
  for (int i = 0; i < 12; ++i)
    ok &= y[i] == 2.0f * x[i] + w[i % 4];
  check(ok, "axpy computes 2 x + w");

  rnn_tensor emptyArgs[2] = {TENSOR(NULL, RNN_F32, 0, 4),
                             TENSOR(w, RNN_F32, 4)};
  rnn_tensor emptyResult = TENSOR(NULL, RNN_F32, 0, 4);
  expectOk("run axpy on 0 rows with null data",
           rnn_model_run(model, "axpy", emptyArgs, 2, &emptyResult, 1, NULL));

  int32_t counts[2] = {2, -1};
  double mx[18], my[9] = {0};
  int64_t total = 0;
  for (int i = 0; i < 18; ++i)
    mx[i] = 0.25 * i;
  rnn_tensor mixArgs[2] = {TENSOR(counts, RNN_I32, 2),
                           TENSOR(mx, RNN_F64, 3, 2, 3)};
  rnn_tensor mixResults[2] = {TENSOR(my, RNN_F64, 3, 3),
                              SCALAR(&total, RNN_I64)};
  expectOk("run mix",
           rnn_model_run(model, "mix", mixArgs, 2, mixResults, 2, NULL));
  ok = total == 1;
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 3; ++c)
      ok &= my[i * 3 + c] == 2 * mx[i * 6 + c] - mx[i * 6 + 3 + c];
  check(ok, "mix computes the weighted sums and the i64 scalar total");

  float lx[15], lw[6], ly[10];
  for (int i = 0; i < 15; ++i)
    lx[i] = 0.5f * (float)(i % 7) - 1.0f;
  for (int i = 0; i < 6; ++i)
    lw[i] = 0.25f * (float)i - 0.5f;
  rnn_tensor linArgs[2] = {TENSOR(lx, RNN_F32, 5, 3),
                           TENSOR(lw, RNN_F32, 2, 3)};
  rnn_tensor linResult = TENSOR(ly, RNN_F32, 5, 2);
  expectOk("run linear (rnn_cpu_gemm called from a model)",
           rnn_model_run(model, "linear", linArgs, 2, &linResult, 1, NULL));
  ok = 1;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 2; ++j) {
      float want = 0.0f;
      for (int p = 0; p < 3; ++p)
        want += lx[i * 3 + p] * lw[j * 3 + p];
      ok &= fabsf(ly[i * 2 + j] - want) <= 1e-6f;
    }
  check(ok, "linear computes x w^T");
}

/* Runs that fail inside the model: rnn_cpu_gemm cannot serve the call and
 * rnn_model_run reports why. */
static void testGemmFailures(const rnn_model *model) {
  section("gemm failures inside a run");
  int32_t mode = 0;
  float y = 0.0f;
  rnn_tensor arg = SCALAR(&mode, RNN_I32);
  rnn_tensor result = TENSOR(&y, RNN_F32, 1);
  EXPECT_ERROR("run bad_gemm with an i32 GEMM",
               rnn_model_run(model, "bad_gemm", &arg, 1, &result, 1, NULL),
               RNN_ERROR_UNSUPPORTED, "bad_gemm: rnn_cpu_gemm", "i32");
  mode = 1;
  EXPECT_ERROR("run bad_gemm with m = 2^31",
               rnn_model_run(model, "bad_gemm", &arg, 1, &result, 1, NULL),
               RNN_ERROR_UNSUPPORTED, "bad_gemm: rnn_cpu_gemm", "m=2147483648",
               "2^31 - 1");

  /* The failure must not outlive its run. */
  float x[3] = {1, 2, 3}, w[6] = {1, 0, 0, 0, 1, 0}, out[2];
  rnn_tensor args[2] = {TENSOR(x, RNN_F32, 1, 3), TENSOR(w, RNN_F32, 2, 3)};
  rnn_tensor linResult = TENSOR(out, RNN_F32, 1, 2);
  expectOk("run linear after a failed GEMM",
           rnn_model_run(model, "linear", args, 2, &linResult, 1, NULL));
  check(out[0] == 1.0f && out[1] == 2.0f, "linear's numbers are right");
}

/*===----------------------------------------------------------------------===*
 * Every check of rnn_model_run and rnn_model_result_shapes
 *===----------------------------------------------------------------------===*/

static void testCallErrors(const rnn_model *model) {
  section("call errors");
  float x[12] = {0}, w[4] = {0}, y[12];
  rnn_tensor args[2] = {TENSOR(x, RNN_F32, 3, 4), TENSOR(w, RNN_F32, 4)};
  rnn_tensor result = TENSOR(y, RNN_F32, 3, 4);
  rnn_tensor bad[2];
  rnn_tensor badResult;

  EXPECT_ERROR("run on a null model",
               rnn_model_run(NULL, "axpy", args, 2, &result, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "rnn_model_run", "model is null");
  EXPECT_ERROR("run a null name",
               rnn_model_run(model, NULL, args, 2, &result, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "rnn_model_run", "name is null");
  EXPECT_ERROR("run an unknown function",
               rnn_model_run(model, "nope", args, 2, &result, 1, NULL),
               RNN_ERROR_NOT_FOUND, "no function 'nope'",
               "axpy, mix, linear, bad_gemm");
  EXPECT_ERROR("run with a stream",
               rnn_model_run(model, "axpy", args, 2, &result, 1, (void *)16),
               RNN_ERROR_UNSUPPORTED, "axpy:", "stream", "CPU");
  EXPECT_ERROR("run with 1 argument",
               rnn_model_run(model, "axpy", args, 1, &result, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT,
               "axpy:", "expected 2 arguments, got 1");
  EXPECT_ERROR("run with 2 results",
               rnn_model_run(model, "axpy", args, 2, &result, 2, NULL),
               RNN_ERROR_INVALID_ARGUMENT,
               "axpy:", "expected 1 results, got 2");
  EXPECT_ERROR("run with null args",
               rnn_model_run(model, "axpy", NULL, 2, &result, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "axpy:", "args is null");
  EXPECT_ERROR("run with null results",
               rnn_model_run(model, "axpy", args, 2, NULL, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "axpy:", "results is null");

  memcpy(bad, args, sizeof(bad));
  bad[1].data = NULL;
  EXPECT_ERROR("run with a null argument buffer",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "axpy: arg #1", "null data pointer",
               "[4]");
  badResult = result;
  badResult.data = NULL;
  EXPECT_ERROR("run with a null result buffer",
               rnn_model_run(model, "axpy", args, 2, &badResult, 1, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "axpy: result #0",
               "null data pointer", "[3, 4]");

  memcpy(bad, args, sizeof(bad));
  bad[0].dtype = RNN_F64;
  EXPECT_ERROR("run with an f64 argument",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_DTYPE_MISMATCH, "axpy: arg #0", "dtype f64",
               "expects f32");
  bad[0].dtype = (rnn_dtype)42;
  EXPECT_ERROR("run with a dtype outside the enum",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_DTYPE_MISMATCH, "axpy: arg #0", "invalid dtype 42",
               "f32");
  badResult = result;
  badResult.dtype = RNN_BF16;
  EXPECT_ERROR("run with a bf16 result",
               rnn_model_run(model, "axpy", args, 2, &badResult, 1, NULL),
               RNN_ERROR_DTYPE_MISMATCH, "axpy: result #0", "dtype bf16",
               "f32");

  memcpy(bad, args, sizeof(bad));
  bad[0] = TENSOR(x, RNN_F32, 3, 2, 2);
  EXPECT_ERROR("run with a rank-3 argument",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #0", "rank 3 [3, 2, 2]",
               "expects rank 2 [s0, 4]");
  bad[0].rank = RNN_MAX_RANK + 1;
  EXPECT_ERROR("run with a rank-9 argument",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #0", "rank 9",
               "rank 2 [s0, 4]");
  bad[0].rank = -1;
  EXPECT_ERROR("run with a rank -1 argument",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #0", "rank -1");
  badResult = TENSOR(y, RNN_F32, 12);
  EXPECT_ERROR("run with a rank-1 result",
               rnn_model_run(model, "axpy", args, 2, &badResult, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: result #0", "rank 1 [12]",
               "rank 2 [s0=3, 4]");

  memcpy(bad, args, sizeof(bad));
  bad[0] = TENSOR(x, RNN_F32, -3, 4);
  EXPECT_ERROR("run with a negative size",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #0", "[-3, 4]",
               "negative size -3 in dim 0");
  bad[0] = TENSOR(x, RNN_F32, INT64_MAX / 2, 4);
  EXPECT_ERROR("run with an element count beyond int64",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #0", "overflows");

  memcpy(bad, args, sizeof(bad));
  bad[1] = TENSOR(w, RNN_F32, 5);
  EXPECT_ERROR("run with a wrong static size",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #1", "shape [5]",
               "expects [4]", "dim 0 is 5, not 4");
  bad[1] = args[1];
  bad[0] = TENSOR(x, RNN_F32, 2, 6);
  EXPECT_ERROR("run with a wrong static size after a dynamic one",
               rnn_model_run(model, "axpy", bad, 2, &result, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #0", "shape [2, 6]",
               "expects [s0=2, 4]", "dim 1 is 6, not 4");

  badResult = TENSOR(y, RNN_F32, 2, 4);
  EXPECT_ERROR("run with a result of the wrong shape",
               rnn_model_run(model, "axpy", args, 2, &badResult, 1, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: result #0", "shape [2, 4]",
               "computes [s0=3, 4]", "dim 0 is 2, not 3",
               "s0 is the size bound by arg #0 dim 0");

  int32_t counts[2] = {1, 1};
  double mx[45] = {0}, my[9];
  int64_t total;
  rnn_tensor mixArgs[2] = {TENSOR(counts, RNN_I32, 2),
                           TENSOR(mx, RNN_F64, 3, 5, 3)};
  rnn_tensor mixResults[2] = {TENSOR(my, RNN_F64, 3, 3),
                              SCALAR(&total, RNN_I64)};
  EXPECT_ERROR("run mix with inconsistent dynamic sizes",
               rnn_model_run(model, "mix", mixArgs, 2, mixResults, 2, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "mix: arg #1", "shape [3, 5, 3]",
               "expects [s1=3, s0=2, 3]", "dim 1 is 5, not 2",
               "s0 is the size bound by arg #0 dim 0");
  mixArgs[1] = TENSOR(mx, RNN_F64, 3, 2, 3);
  mixResults[1] = TENSOR(&total, RNN_I64, 1);
  EXPECT_ERROR("run mix with a rank-1 scalar result",
               rnn_model_run(model, "mix", mixArgs, 2, mixResults, 2, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "mix: result #1", "rank 1 [1]",
               "rank 0 []");
  mixResults[1] = SCALAR(&total, RNN_I64);
  mixResults[0] = TENSOR(my, RNN_F64, 2, 3);
  EXPECT_ERROR("run mix with a result bound by the wrong symbol size",
               rnn_model_run(model, "mix", mixArgs, 2, mixResults, 2, NULL),
               RNN_ERROR_SHAPE_MISMATCH, "mix: result #0", "shape [2, 3]",
               "computes [s1=3, 3]", "s1 is the size bound by arg #1 dim 0");
  mixResults[0] = TENSOR(my, RNN_F64, 3, 3);
  expectOk("run mix with the sizes fixed",
           rnn_model_run(model, "mix", mixArgs, 2, mixResults, 2, NULL));

  /* rnn_model_result_shapes checks the arguments as runs do. */
  rnn_tensor shapes[2];
  EXPECT_ERROR("result_shapes on a null model",
               rnn_model_result_shapes(NULL, "axpy", args, 2, shapes, 1),
               RNN_ERROR_INVALID_ARGUMENT, "rnn_model_result_shapes",
               "model is null");
  EXPECT_ERROR("result_shapes of a null name",
               rnn_model_result_shapes(model, NULL, args, 2, shapes, 1),
               RNN_ERROR_INVALID_ARGUMENT, "name is null");
  EXPECT_ERROR("result_shapes of an unknown function",
               rnn_model_result_shapes(model, "nope", args, 2, shapes, 1),
               RNN_ERROR_NOT_FOUND, "no function 'nope'");
  EXPECT_ERROR("result_shapes with 3 arguments",
               rnn_model_result_shapes(model, "axpy", args, 3, shapes, 1),
               RNN_ERROR_INVALID_ARGUMENT,
               "axpy:", "expected 2 arguments, got 3");
  EXPECT_ERROR("result_shapes with 0 results",
               rnn_model_result_shapes(model, "axpy", args, 2, shapes, 0),
               RNN_ERROR_INVALID_ARGUMENT,
               "axpy:", "expected 1 results, got 0");
  EXPECT_ERROR("result_shapes with null args",
               rnn_model_result_shapes(model, "axpy", NULL, 2, shapes, 1),
               RNN_ERROR_INVALID_ARGUMENT, "axpy:", "args is null");
  EXPECT_ERROR("result_shapes with null results",
               rnn_model_result_shapes(model, "axpy", args, 2, NULL, 1),
               RNN_ERROR_INVALID_ARGUMENT, "axpy:", "results is null");
  memcpy(bad, args, sizeof(bad));
  bad[0].data = NULL;
  EXPECT_ERROR("result_shapes with a null argument buffer",
               rnn_model_result_shapes(model, "axpy", bad, 2, shapes, 1),
               RNN_ERROR_INVALID_ARGUMENT, "axpy: arg #0", "null data");
  memcpy(bad, args, sizeof(bad));
  bad[1].dtype = RNN_I64;
  EXPECT_ERROR("result_shapes with an i64 argument",
               rnn_model_result_shapes(model, "axpy", bad, 2, shapes, 1),
               RNN_ERROR_DTYPE_MISMATCH, "axpy: arg #1", "dtype i64", "f32");
  memcpy(bad, args, sizeof(bad));
  bad[1] = TENSOR(w, RNN_F32, 2, 2);
  EXPECT_ERROR("result_shapes with a rank-2 argument",
               rnn_model_result_shapes(model, "axpy", bad, 2, shapes, 1),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #1", "rank 2 [2, 2]",
               "rank 1 [4]");
  bad[1] = TENSOR(w, RNN_F32, -4);
  EXPECT_ERROR("result_shapes with a negative size",
               rnn_model_result_shapes(model, "axpy", bad, 2, shapes, 1),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #1", "negative size -4");
  bad[1] = TENSOR(w, RNN_F32, 3);
  EXPECT_ERROR("result_shapes with a wrong static size",
               rnn_model_result_shapes(model, "axpy", bad, 2, shapes, 1),
               RNN_ERROR_SHAPE_MISMATCH, "axpy: arg #1", "dim 0 is 3, not 4");
  mixArgs[1] = TENSOR(mx, RNN_F64, 3, 1, 3);
  EXPECT_ERROR("result_shapes of mix with inconsistent dynamic sizes",
               rnn_model_result_shapes(model, "mix", mixArgs, 2, shapes, 2),
               RNN_ERROR_SHAPE_MISMATCH, "mix: arg #1", "dim 1 is 1, not 2",
               "s0 is the size bound by arg #0 dim 0");

  /* The signature queries. */
  int32_t numArgs, numResults;
  rnn_tensor info;
  EXPECT_ERROR("signature of a null model",
               rnn_model_signature(NULL, "axpy", &numArgs, &numResults),
               RNN_ERROR_INVALID_ARGUMENT, "rnn_model_signature",
               "model is null");
  EXPECT_ERROR("signature of an unknown function",
               rnn_model_signature(model, "nope", &numArgs, &numResults),
               RNN_ERROR_NOT_FOUND, "rnn_model_signature", "'nope'");
  EXPECT_ERROR("signature into null counts",
               rnn_model_signature(model, "axpy", NULL, &numResults),
               RNN_ERROR_INVALID_ARGUMENT, "axpy:", "null count");
  EXPECT_ERROR("arg_info #2 of axpy",
               rnn_model_arg_info(model, "axpy", 2, &info),
               RNN_ERROR_INVALID_ARGUMENT,
               "axpy:", "argument index 2 is out of range (there are 2)");
  EXPECT_ERROR("result_info #-1 of axpy",
               rnn_model_result_info(model, "axpy", -1, &info),
               RNN_ERROR_INVALID_ARGUMENT,
               "axpy:", "result index -1 is out of range (there are 1)");
  EXPECT_ERROR("arg_info into a null info",
               rnn_model_arg_info(model, "axpy", 0, NULL),
               RNN_ERROR_INVALID_ARGUMENT, "axpy:", "null info");
  EXPECT_ERROR("result_info of an unknown function",
               rnn_model_result_info(model, "nope", 0, &info),
               RNN_ERROR_NOT_FOUND, "rnn_model_result_info", "'nope'");

  /* The message stays until the next failure, through successful calls. */
  EXPECT_ERROR("a failure to remember",
               rnn_model_run(model, "remember_me", args, 2, &result, 1, NULL),
               RNN_ERROR_NOT_FOUND, "remember_me");
  expectOk("a successful run",
           rnn_model_run(model, "axpy", args, 2, &result, 1, NULL));
  check(strstr(rnn_last_error(), "remember_me") != NULL,
        "rnn_last_error keeps the last failure after a success: %s",
        rnn_last_error());
}

/*===----------------------------------------------------------------------===*
 * Threads
 *===----------------------------------------------------------------------===*/

enum { NUM_THREADS = 4, RUNS_PER_THREAD = 200 };

typedef struct ThreadState {
  const rnn_model *model;
  pthread_barrier_t *barrier;
  int index;
  int wrongResults;
  int lostMessage;
} ThreadState;

static void *runThread(void *opaque) {
  ThreadState *state = opaque;
  char name[32];
  snprintf(name, sizeof(name), "missing_in_thread_%d", state->index);
  rnn_model_run(state->model, name, NULL, 0, NULL, 0, NULL);
  /* Every thread has failed before any goes on, so a shared message would
   * be overwritten by now. */
  pthread_barrier_wait(state->barrier);
  if (!strstr(rnn_last_error(), name))
    state->lostMessage = 1;

  float x[8 * 4], w[4], y[8 * 4];
  for (int run = 0; run < RUNS_PER_THREAD; ++run) {
    int64_t rows = 1 + (state->index + run) % 8;
    for (int i = 0; i < rows * 4; ++i)
      x[i] = (float)(state->index * 1000 + run + i);
    for (int j = 0; j < 4; ++j)
      w[j] = (float)(state->index - j);
    rnn_tensor args[2] = {TENSOR(x, RNN_F32, rows, 4), TENSOR(w, RNN_F32, 4)};
    rnn_tensor result = TENSOR(y, RNN_F32, rows, 4);
    if (rnn_model_run(state->model, "axpy", args, 2, &result, 1, NULL) !=
        RNN_OK) {
      ++state->wrongResults;
      continue;
    }
    for (int i = 0; i < rows * 4; ++i)
      if (y[i] != 2.0f * x[i] + w[i % 4]) {
        ++state->wrongResults;
        break;
      }
  }
  return NULL;
}

static void testThreads(const rnn_model *model) {
  section("threads");
  pthread_t threads[NUM_THREADS];
  ThreadState states[NUM_THREADS];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, NUM_THREADS);
  for (int t = 0; t < NUM_THREADS; ++t) {
    states[t] = (ThreadState){model, &barrier, t, 0, 0};
    pthread_create(&threads[t], NULL, runThread, &states[t]);
  }
  for (int t = 0; t < NUM_THREADS; ++t)
    pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&barrier);
  for (int t = 0; t < NUM_THREADS; ++t) {
    check(!states[t].lostMessage, "thread %d kept its own error message", t);
    check(states[t].wrongResults == 0,
          "thread %d: %d concurrent axpy runs, %d wrong", t, RUNS_PER_THREAD,
          states[t].wrongResults);
  }
}

/*===----------------------------------------------------------------------===*
 * rnn_cpu_gemm
 *===----------------------------------------------------------------------===*/

/* The test's own 16-bit decoders, written differently from the runtime's
 * (arithmetic rather than bit moves) so that one does not check itself. */
static double decodeBf16(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof(value));
  return value;
}

static double decodeF16(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0)
    return sign * ldexp(mantissa, -24);
  return sign * ldexp(1024 + mantissa, exponent - 25);
}

static uint64_t rngState = 0x9e3779b97f4a7c15ull;

static double randomUnit(void) {
  rngState ^= rngState << 13;
  rngState ^= rngState >> 7;
  rngState ^= rngState << 17;
  return (double)(rngState >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static size_t sizeOf(rnn_dtype dtype) {
  return dtype == RNN_F64 ? 8 : dtype == RNN_F32 ? 4 : 2;
}

/* Element i of a buffer of `dtype`, as a double. */
static double load(const void *data, rnn_dtype dtype, int64_t i) {
  switch (dtype) {
  case RNN_F32:
    return ((const float *)data)[i];
  case RNN_F64:
    return ((const double *)data)[i];
  case RNN_BF16:
    return decodeBf16(((const uint16_t *)data)[i]);
  default:
    return decodeF16(((const uint16_t *)data)[i]);
  }
}

/* A random value in [-1, 1] of `dtype`, exactly representable there. */
static void storeRandom(void *data, rnn_dtype dtype, int64_t i) {
  double value = randomUnit();
  switch (dtype) {
  case RNN_F32:
    ((float *)data)[i] = (float)value;
    return;
  case RNN_F64:
    ((double *)data)[i] = value;
    return;
  case RNN_BF16: {
    float narrow = (float)value;
    uint32_t bits;
    memcpy(&bits, &narrow, sizeof(bits));
    ((uint16_t *)data)[i] = (uint16_t)(bits >> 16); /* truncation */
    return;
  }
  default: {
    /* Sign, an exponent for [2^-4, 2) and a random mantissa. */
    uint16_t sign = value < 0 ? 0x8000 : 0;
    uint16_t exponent = (uint16_t)(11 + (rngState >> 20) % 5);
    ((uint16_t *)data)[i] =
        (uint16_t)(sign | exponent << 10 | ((rngState >> 40) & 0x3ff));
    return;
  }
  }
}

/* NaN in every dtype: C's sentinel, for "written" and "left alone". */
static void storeSentinel(void *data, rnn_dtype dtype, int64_t i) {
  switch (dtype) {
  case RNN_F32:
    ((float *)data)[i] = NAN;
    return;
  case RNN_F64:
    ((double *)data)[i] = NAN;
    return;
  case RNN_BF16:
    ((uint16_t *)data)[i] = 0x7fc1;
    return;
  default:
    ((uint16_t *)data)[i] = 0x7e01;
    return;
  }
}

static int isSentinel(const void *data, rnn_dtype dtype, int64_t i) {
  if (dtype == RNN_BF16)
    return ((const uint16_t *)data)[i] == 0x7fc1;
  if (dtype == RNN_F16)
    return ((const uint16_t *)data)[i] == 0x7e01;
  return isnan(load(data, dtype, i));
}

static const char *dtypeName(rnn_dtype dtype) {
  static const char *const names[] = {"f32", "f64", "bf16",
                                      "f16", "i32", "i64"};
  return names[dtype];
}

static void testGemmCase(rnn_dtype abType, rnn_dtype cType, int layout,
                         int64_t m, int64_t n, int64_t k, int pad) {
  /* Leading dimensions with `pad` extra elements, so that ld is used. */
  int64_t lda = k + pad, ldc = n + pad;
  int64_t bRows = layout == RNN_GEMM_B_NK ? n : k;
  int64_t bCols = layout == RNN_GEMM_B_NK ? k : n;
  int64_t ldb = bCols + pad;
  size_t abSize = sizeOf(abType), cSize = sizeOf(cType);
  void *a = malloc((size_t)(m * lda + 1) * abSize);
  void *b = malloc((size_t)(bRows * ldb + 1) * abSize);
  void *c = malloc((size_t)(m * ldc + 1) * cSize);
  double *ref = calloc((size_t)(m * n + 1), sizeof(double));
  for (int64_t i = 0; i < m * lda; ++i)
    storeRandom(a, abType, i);
  for (int64_t i = 0; i < bRows * ldb; ++i)
    storeRandom(b, abType, i);
  for (int64_t i = 0; i < m * ldc; ++i)
    storeSentinel(c, cType, i);

  double refMax = 0.0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        int64_t bIndex = layout == RNN_GEMM_B_NK ? j * ldb + p : p * ldb + j;
        sum += load(a, abType, i * lda + p) * load(b, abType, bIndex);
      }
      ref[i * n + j] = sum;
      refMax = fmax(refMax, fabs(sum));
    }

  rnn_cpu_gemm(abType, cType, layout, m, n, k, (int64_t)(intptr_t)a, lda,
               (int64_t)(intptr_t)b, ldb, (int64_t)(intptr_t)c, ldc);

  double maxError = 0.0;
  int written = 1, padKept = 1;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= n) {
        padKept &= isSentinel(c, cType, i * ldc + j);
        continue;
      }
      double got = load(c, cType, i * ldc + j);
      if (isnan(got))
        written = 0;
      else
        maxError = fmax(maxError, fabs(got - ref[i * n + j]));
    }
  }
  double tolerance = (abType == RNN_F32 || abType == RNN_F64) ? 1e-5 : 1e-2;
  int accurate =
      refMax == 0.0 ? maxError == 0.0 : maxError <= tolerance * refMax;
  check(written && padKept && accurate,
        "gemm %s x %s -> %s, B %s, m=%lld n=%lld k=%lld, ld pad %d: "
        "relative error %.3g (limit %g)%s%s",
        dtypeName(abType), dtypeName(abType), dtypeName(cType),
        layout == RNN_GEMM_B_NK ? "n x k" : "k x n", (long long)m, (long long)n,
        (long long)k, pad, refMax == 0.0 ? maxError : maxError / refMax,
        tolerance, written ? "" : ", C not fully written",
        padKept ? "" : ", padding overwritten");
  free(a);
  free(b);
  free(c);
  free(ref);
}

static void testGemmAccuracy(void) {
  section("gemm accuracy");
  static const rnn_dtype pairs[][2] = {
      {RNN_F32, RNN_F32}, {RNN_F64, RNN_F64},   {RNN_BF16, RNN_F32},
      {RNN_F16, RNN_F32}, {RNN_BF16, RNN_BF16}, {RNN_F16, RNN_F16}};
  static const int64_t sizes[][3] = {{1, 1, 1},    {1, 5, 7},    {1, 16, 0},
                                     {3, 5, 0},    {0, 4, 3},    {4, 0, 3},
                                     {0, 0, 0},    {7, 9, 13},   {8, 8, 8},
                                     {17, 33, 65}, {64, 31, 19}, {3, 130, 67}};
  int caseIndex = 0;
  for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); ++p)
    for (int layout = 0; layout < 2; ++layout)
      for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s)
        testGemmCase(pairs[p][0], pairs[p][1], layout, sizes[s][0], sizes[s][1],
                     sizes[s][2], (caseIndex++ % 2) * 3);
}

/* C += A * B^T (RNN_GEMM_ACCUMULATE) onto known values of C: f32, f64 and
 * bf16 operands with an f32 C; with k = 0, C keeps its values. */
static void testGemmAccumulate(void) {
  section("gemm accumulate");
  static const rnn_dtype pairs[][2] = {
      {RNN_F32, RNN_F32}, {RNN_F64, RNN_F64}, {RNN_BF16, RNN_F32}};
  for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); ++p) {
    rnn_dtype abType = pairs[p][0], cType = pairs[p][1];
    for (int64_t k = 0; k <= 5; k += 5) {
      enum { M = 3, N = 4, K = 5 };
      unsigned char a[M * K * 8], b[N * K * 8], c[M * N * 8];
      double before[M * N];
      for (int64_t i = 0; i < M * K; ++i)
        storeRandom(a, abType, i);
      for (int64_t i = 0; i < N * K; ++i)
        storeRandom(b, abType, i);
      for (int64_t i = 0; i < M * N; ++i) {
        storeRandom(c, cType, i);
        before[i] = load(c, cType, i);
      }
      rnn_cpu_gemm(abType, cType, RNN_GEMM_B_NK | RNN_GEMM_ACCUMULATE, M, N, k,
                   (int64_t)(intptr_t)a, K, (int64_t)(intptr_t)b, K,
                   (int64_t)(intptr_t)c, N);
      double maxError = 0.0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double want = before[i * N + j];
          for (int64_t q = 0; q < k; ++q)
            want += load(a, abType, i * K + q) * load(b, abType, j * K + q);
          maxError = fmax(maxError, fabs(load(c, cType, i * N + j) - want));
        }
      check(maxError <= 1e-5, "gemm accumulate %s -> %s, k=%lld: error %.3g",
            dtypeName(abType), dtypeName(cType), (long long)k, maxError);
    }
  }
}

/* One element of C from up to 3 products, compared bit for bit: the
 * rounding rules of the 16-bit conversions. */
static void testGemmExact(const char *what, rnn_dtype abType, rnn_dtype cType,
                          const uint16_t a[3], const uint16_t b[3],
                          uint32_t want) {
  uint16_t c16 = 0x5555;
  float c32 = -1.0f;
  void *c = cType == RNN_F32 ? (void *)&c32 : (void *)&c16;
  rnn_cpu_gemm(abType, cType, RNN_GEMM_B_NK, 1, 1, 3, (int64_t)(intptr_t)a, 3,
               (int64_t)(intptr_t)b, 3, (int64_t)(intptr_t)c, 1);
  uint32_t got = c16;
  if (cType == RNN_F32)
    memcpy(&got, &c32, sizeof(got));
  check(got == want, "gemm rounding: %s: got 0x%04x, want 0x%04x", what, got,
        want);
}

static void testGemmRounding(void) {
  section("gemm rounding");
  const uint16_t bf1[3] = {0x3f80, 0x3f80, 0x3f80}; /* 1, 1, 1 */
  const uint16_t h1[3] = {0x3c00, 0x3c00, 0x3c00};
  /* bf16: 1 = 0x3f80, 1 + 2^-7 = 0x3f81, 2^-8 = 0x3b80, 2^-16 = 0x3780. */
  testGemmExact("bf16 1 + 2^-8 ties to even 1", RNN_BF16, RNN_BF16,
                (const uint16_t[]){0x3f80, 0x3b80, 0}, bf1, 0x3f80);
  testGemmExact("bf16 1 + 2^-7 + 2^-8 ties to even 1 + 2^-6", RNN_BF16,
                RNN_BF16, (const uint16_t[]){0x3f81, 0x3b80, 0}, bf1, 0x3f82);
  testGemmExact("bf16 1 + 2^-8 + 2^-16 rounds up", RNN_BF16, RNN_BF16,
                (const uint16_t[]){0x3f80, 0x3b80, 0x3780}, bf1, 0x3f81);
  testGemmExact("bf16 -(1 + 2^-8) ties to even -1", RNN_BF16, RNN_BF16,
                (const uint16_t[]){0xbf80, 0xbb80, 0}, bf1, 0xbf80);
  /* The largest bf16 is 0x7f7f = (2 - 2^-7) 2^127; 2^119 = 0x7b00 and
   * 2^118 = 0x7a80 add a half and a quarter of its ulp. */
  testGemmExact("bf16 (2 - 2^-8) 2^127 ties to infinity", RNN_BF16, RNN_BF16,
                (const uint16_t[]){0x7f7f, 0x7b00, 0}, bf1, 0x7f80);
  testGemmExact("bf16 (2 - 2^-7 + 2^-9) 2^127 rounds to the largest", RNN_BF16,
                RNN_BF16, (const uint16_t[]){0x7f7f, 0x7a80, 0}, bf1, 0x7f7f);
  testGemmExact("bf16 NaN stays NaN", RNN_BF16, RNN_BF16,
                (const uint16_t[]){0x7fc0, 0, 0}, bf1, 0x7fc0);
  testGemmExact("bf16 input 1 + 2^-7 widens exactly", RNN_BF16, RNN_F32,
                (const uint16_t[]){0x3f81, 0, 0}, bf1, 0x3f810000);

  /* f16: 1 = 0x3c00, 1 + 2^-10 = 0x3c01, 2^-11 = 0x1000, 2^-20 = 0x0010,
   * 2^-14 = 0x0400, 1.5 * 2^-13 = 0x0a00, 65504 = 0x7bff, 16 = 0x4c00,
   * 15 = 0x4b80. */
  testGemmExact("f16 1 + 2^-11 ties to even 1", RNN_F16, RNN_F16,
                (const uint16_t[]){0x3c00, 0x1000, 0}, h1, 0x3c00);
  testGemmExact("f16 1 + 2^-10 + 2^-11 ties to even 1 + 2^-9", RNN_F16, RNN_F16,
                (const uint16_t[]){0x3c01, 0x1000, 0}, h1, 0x3c02);
  testGemmExact("f16 1 + 2^-11 + 2^-20 rounds up", RNN_F16, RNN_F16,
                (const uint16_t[]){0x3c00, 0x1000, 0x0010}, h1, 0x3c01);
  testGemmExact("f16 65504 + 16 = 65520 ties to infinity", RNN_F16, RNN_F16,
                (const uint16_t[]){0x7bff, 0x4c00, 0}, h1, 0x7c00);
  testGemmExact("f16 65504 + 15 rounds to 65504", RNN_F16, RNN_F16,
                (const uint16_t[]){0x7bff, 0x4b80, 0}, h1, 0x7bff);
  testGemmExact("f16 2^-25 ties to even 0", RNN_F16, RNN_F16,
                (const uint16_t[]){0x0400, 0, 0},
                (const uint16_t[]){0x1000, 0, 0}, 0x0000);
  testGemmExact("f16 1.5 * 2^-24 ties to even subnormal 2", RNN_F16, RNN_F16,
                (const uint16_t[]){0x0a00, 0, 0},
                (const uint16_t[]){0x1000, 0, 0}, 0x0002);
  testGemmExact("f16 2^-14 - 2^-25 ties up to the smallest normal", RNN_F16,
                RNN_F16, (const uint16_t[]){0x0400, 0x8400, 0},
                (const uint16_t[]){0x3c00, 0x1000, 0}, 0x0400);
  testGemmExact("f16 -(1 + 2^-11) ties to even -1", RNN_F16, RNN_F16,
                (const uint16_t[]){0xbc00, 0x9000, 0}, h1, 0xbc00);
  testGemmExact("f16 NaN stays NaN", RNN_F16, RNN_F16,
                (const uint16_t[]){0x7e00, 0, 0}, h1, 0x7e00);
  testGemmExact("f16 subnormal input 2^-24 widens exactly", RNN_F16, RNN_F32,
                (const uint16_t[]){0x0001, 0, 0}, h1, 0x33800000);
  testGemmExact("f16 input -65504 widens exactly", RNN_F16, RNN_F32,
                (const uint16_t[]){0xfbff, 0, 0}, h1, 0xc77fe000);
  testGemmExact("f16 input infinity widens to infinity", RNN_F16, RNN_F32,
                (const uint16_t[]){0x7c00, 0, 0}, h1, 0x7f800000);

  /* A call the GEMM cannot do writes nothing and does not crash. */
  float c = 7.0f, ab = 1.0f;
  rnn_cpu_gemm(RNN_I64, RNN_F32, RNN_GEMM_B_NK, 1, 1, 1, (int64_t)(intptr_t)&ab,
               1, (int64_t)(intptr_t)&ab, 1, (int64_t)(intptr_t)&c, 1);
  rnn_cpu_gemm(RNN_F32, RNN_F32, 2, 1, 1, 1, (int64_t)(intptr_t)&ab, 1,
               (int64_t)(intptr_t)&ab, 1, (int64_t)(intptr_t)&c, 1);
  rnn_cpu_gemm(RNN_F32, RNN_F32, RNN_GEMM_B_NK, 1, 1, 2, (int64_t)(intptr_t)&ab,
               1, (int64_t)(intptr_t)&ab, 2, (int64_t)(intptr_t)&c, 1);
  check(c == 7.0f, "unsupported GEMM calls (i64, layout 2, lda < k) leave C "
                   "alone");
}

/* rnn_cpu_gemm_partials: the partial products of K slices, with B stored
 * n x k or k x n (the backward's recurrent product, split across the step
 * loop's back edge), against sums computed here; calls it cannot do (slices
 * not dividing k, another layout) leave the partials alone. */
static void testGemmPartials(void) {
  section("rnn_cpu_gemm_partials");
  enum { M = 2, N = 3, K = 4, S = 2 };
  const float a[M * K] = {1, -2, 3, 0.5f, -1, 4, 2, -3};
  const float kn[K * N] = {2, -1, 0.5f, 1, 3, -2, -4, 1, 2, 0.25f, -1, 3};
  float nk[N * K];
  for (int kk = 0; kk < K; ++kk)
    for (int j = 0; j < N; ++j)
      nk[j * K + kk] = kn[kk * N + j];
  for (int layout = RNN_GEMM_B_NK; layout <= RNN_GEMM_B_KN; ++layout) {
    float p[S * M * N];
    rnn_cpu_gemm_partials(
        RNN_F32, RNN_F32, layout, S, M, N, K, (int64_t)(intptr_t)a, K,
        (int64_t)(intptr_t)(layout == RNN_GEMM_B_KN ? kn : nk),
        layout == RNN_GEMM_B_KN ? N : K, (int64_t)(intptr_t)p, N);
    int exact = 1;
    for (int s = 0; s < S; ++s)
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          float want = 0;
          for (int kk = s * (K / S); kk < (s + 1) * (K / S); ++kk)
            want += a[i * K + kk] * kn[kk * N + j];
          exact = exact && p[(s * M + i) * N + j] == want;
        }
    check(exact, layout == RNN_GEMM_B_KN
                     ? "partials of a k x n B: each slice's product"
                     : "partials of an n x k B: each slice's product");
  }
  float p[S * M * N];
  for (int i = 0; i < S * M * N; ++i)
    p[i] = 7.0f;
  rnn_cpu_gemm_partials(RNN_F32, RNN_F32, RNN_GEMM_B_KN, 3, M, N, K,
                        (int64_t)(intptr_t)a, K, (int64_t)(intptr_t)kn, N,
                        (int64_t)(intptr_t)p, N);
  rnn_cpu_gemm_partials(RNN_F32, RNN_F32, 2, S, M, N, K, (int64_t)(intptr_t)a,
                        K, (int64_t)(intptr_t)kn, N, (int64_t)(intptr_t)p, N);
  int untouched = 1;
  for (int i = 0; i < S * M * N; ++i)
    untouched = untouched && p[i] == 7.0f;
  check(untouched, "unsupported partials calls (3 slices of k=4, layout 2) "
                   "leave the partials alone");
}

/* __truncsfbf2, which compiled CPU models call where LLVM rounds a bf16
 * value in a register (the runtime provides it: GCC 12's libgcc lacks it):
 * round to nearest with ties to even, overflow to infinity, NaN kept quiet
 * with its sign. */
__bf16 __truncsfbf2(float value);

static void testBf16Rounding(void) {
  section("bf16 rounding");
  static const struct {
    uint32_t in;
    uint16_t out;
    const char *what;
  } cases[] = {
      {0x3f800000u, 0x3f80, "1.0"},
      {0x3f808000u, 0x3f80, "a tie rounds to the even 1.0"},
      {0x3f818000u, 0x3f82, "a tie rounds up to the even neighbour"},
      {0x3f808001u, 0x3f81, "past the tie rounds up"},
      {0xc0200000u, 0xc020, "-2.5"},
      {0x7f7fffffu, 0x7f80, "the largest float overflows to infinity"},
      {0xff800000u, 0xff80, "-infinity"},
      {0x7f800001u, 0x7fc0, "a signalling NaN becomes quiet"},
      {0xffc00000u, 0xffc0, "a negative quiet NaN keeps its sign"},
      {0x00000001u, 0x0000, "the smallest denormal rounds to zero"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    float in;
    memcpy(&in, &cases[i].in, sizeof in);
    __bf16 rounded = __truncsfbf2(in);
    uint16_t bits;
    memcpy(&bits, &rounded, sizeof bits);
    check(bits == cases[i].out, cases[i].what);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s MODEL NOT_A_LIBRARY [BROKEN_MODEL...]\n"
            "  MODEL is librnn_test_fake_model.so, NOT_A_LIBRARY any file "
            "that is not a\n  shared library, BROKEN_MODEL each "
            "librnn_test_broken_<case>.so\n",
            argv[0]);
    return 2;
  }
  /* PASS lines and the runtime's messages interleave in order. */
  setvbuf(stdout, NULL, _IOLBF, 0);

  testLoadErrors(argv[1], argv[2]);
  testBrokenModels(argc - 3, argv + 3);

  rnn_model *model = NULL;
  section("load");
  expectOk("load the fake model", rnn_model_load(argv[1], &model));
  if (!model) {
    printf("%d checks, %d failed\n", numChecks, numFailures);
    return 1;
  }
  testIntrospection(model);
  testRuns(model);
  testGemmFailures(model);
  testCallErrors(model);
  testThreads(model);
  rnn_model_unload(model);
  rnn_model_unload(NULL);

  testGemmAccuracy();
  testGemmAccumulate();
  testGemmRounding();
  testGemmPartials();
  testBf16Rounding();

  printf("%d checks, %d failed\n", numChecks, numFailures);
  return numFailures ? 1 : 0;
}
