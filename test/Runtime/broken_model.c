/*===- broken_model.c - Libraries that are not valid rnn models -----------===*\
|*                                                                          *|
|* Compiled once per case, with -DBROKEN_<CASE>, into                       *|
|* librnn_test_broken_<case>.so; rnn-runtime-test knows from the file name  *|
|* which error each one must produce at load time.                          *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

/* Every case exports the function its manifest would name, so that the
 * manifest, not a missing symbol, is what fails. */
void rnn_call_f(void **descriptors) { (void)descriptors; }

#define ARGS "arg 0 f32 2 s0 4\n"
#define RESULTS "result 0 f32 2 s0 4\n"

#if defined(BROKEN_NO_MANIFEST)
/* No rnn_manifest at all: some other shared library. */
#elif defined(BROKEN_BAD_VERSION)
const char rnn_manifest[] =
    "rnn-manifest 2\nfunction f 1 1\n" ARGS RESULTS "end\n";
#elif defined(BROKEN_BAD_HEADER)
const char rnn_manifest[] = "manifest 1\nfunction f 1 1\n" ARGS RESULTS "end\n";
#elif defined(BROKEN_BAD_DTYPE)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n"
                            "arg 0 f128 2 s0 4\n" RESULTS "end\n";
#elif defined(BROKEN_BAD_RANK)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n"
                            "arg 0 f32 9 1 1 1 1 1 1 1 1 1\n" RESULTS "end\n";
#elif defined(BROKEN_SIZE_COUNT)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n"
                            "arg 0 f32 2 4\n" RESULTS "end\n";
#elif defined(BROKEN_BAD_SIZE)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n"
                            "arg 0 f32 2 s-1 4\n" RESULTS "end\n";
#elif defined(BROKEN_NEGATIVE_SIZE)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n"
                            "arg 0 f32 2 -3 4\n" RESULTS "end\n";
#elif defined(BROKEN_BAD_INDEX)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n"
                            "arg 1 f32 2 s0 4\n" RESULTS "end\n";
#elif defined(BROKEN_NO_END)
const char rnn_manifest[] =
    "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS "function g 0 0\nend\n";
#elif defined(BROKEN_TRUNCATED)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 2 1\n" ARGS;
#elif defined(BROKEN_DUPLICATE)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS
                            "end\nfunction f 1 1\n" ARGS RESULTS "end\n";
#elif defined(BROKEN_BAD_NAME)
const char rnn_manifest[] =
    "rnn-manifest 1\nfunction f-g 1 1\n" ARGS RESULTS "end\n";
#elif defined(BROKEN_MISSING_CALL)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS
                            "end\nfunction ghost 1 1\n" ARGS RESULTS "end\n";
#elif defined(BROKEN_UNBOUND_SYMBOL)
const char rnn_manifest[] =
    "rnn-manifest 1\nfunction f 1 1\n" ARGS "result 0 f32 2 s0 s1\nend\n";
#elif defined(BROKEN_TRAINING_LINE)
const char rnn_manifest[] =
    "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS "training f_train\nend\n";
#elif defined(BROKEN_TRAINING_ARG)
const char rnn_manifest[] =
    "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS "training f f 0 5\nend\n";
#elif defined(BROKEN_TRAINING_UNKNOWN)
const char rnn_manifest[] = "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS
                            "training ghost_train ghost_backward 0 0\nend\n";
#elif defined(BROKEN_TRAINING_MISMATCH)
/* f as its own backward: a backward takes 1 + 0 + 1 arguments, f takes 1. */
const char rnn_manifest[] =
    "rnn-manifest 1\nfunction f 1 1\n" ARGS RESULTS "training f f 0 0\nend\n";
#elif defined(BROKEN_NOT_TERMINATED)
/* Exactly as long as its text: no NUL, so reading it as a C string would run
 * into whatever the linker placed next. Not instrumented by ASan (a sanitized
 * build, scripts/test-sanitizers.sh), which would pad the array with a
 * redzone and count it in the symbol's size; the runtime reads that size as
 * the array's, as it is in the models that rnn-compile makes. */
__attribute__((nonstring, no_sanitize("address"))) const char rnn_manifest[14] =
    "rnn-manifest 1";
#else
#error "define one BROKEN_<CASE>"
#endif
