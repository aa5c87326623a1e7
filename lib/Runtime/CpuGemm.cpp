//===- CpuGemm.cpp - rnn_cpu_gemm on OpenBLAS -----------------------------===//
//
// The one matrix product compiled CPU models call. f32 and f64 go straight to
// OpenBLAS. OpenBLAS has no portable 16-bit GEMM (sbgemm exists only in some
// builds and there is no f16 one), so bf16 and f16 operands are widened to
// f32 in a per-thread scratch buffer, multiplied with sgemm, and a 16-bit C
// is rounded back. The conversions are written out here, bit by bit, rather
// than taken from compiler extensions, so that their rounding is the one
// documented (to nearest, ties to even) on every compiler.
//
//===----------------------------------------------------------------------===//

// Only the C API leaves the library (the target builds with hidden
// visibility); these headers declare it.
#pragma GCC visibility push(default)
#include "rnn/Runtime/rnn_cpu_gemm.h"
#include "rnn/Runtime/rnn_runtime.h"
#pragma GCC visibility pop

#include "CpuGemm.h"
#include "Dtypes.h"

#include <cblas.h>
#include <dlfcn.h>
#include <string>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace rnn::runtime;

static thread_local GemmFailure lastFailure;

[[gnu::format(printf, 2, 3)]] static void
recordFailure(rnn_status status, const char *format, ...) {
  if (lastFailure.status != RNN_OK)
    return;
  lastFailure.status = status;
  va_list args;
  va_start(args, format);
  vsnprintf(lastFailure.message, sizeof(lastFailure.message), format, args);
  va_end(args);
}

//===----------------------------------------------------------------------===//
// 16-bit floating point conversions
//===----------------------------------------------------------------------===//

static uint32_t bitsOf(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float floatOf(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

// bf16 is the top half of an f32, so widening is exact.
static float bf16ToF32(uint16_t half) { return floatOf(uint32_t(half) << 16); }

static uint16_t f32ToBf16(float value) {
  uint32_t bits = bitsOf(value);
  // A NaN whose payload lies only in the low 16 bits would otherwise become
  // an infinity; setting the quiet bit keeps it a NaN.
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x0040u);
  // Adding just under half an ulp, plus one when the kept part is odd, rounds
  // to nearest with ties to even. A carry into the exponent is the correctly
  // rounded result, up to and including the overflow to infinity.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

static float f16ToF32(uint16_t half) {
  uint32_t sign = uint32_t(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32 (10 bits).
    return floatOf(bitsOf(float(mantissa) * 0x1p-24f) | sign);
  }
  if (exponent == 0x1f)
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  // Rebias the exponent from 15 to 127.
  return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// value >> shift (1 <= shift <= 31), rounded to nearest, ties to even.
static uint32_t shiftRightRoundingToEven(uint32_t value, unsigned shift) {
  uint32_t kept = value >> shift;
  uint32_t rest = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u)))
    ++kept;
  return kept;
}

static uint16_t f32ToF16(float value) {
  uint32_t bits = bitsOf(value);
  auto sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) {
    // Infinity, or a NaN made quiet so that it cannot turn into infinity.
    return sign | (mantissa ? 0x7e00u | (mantissa >> 13) : 0x7c00u);
  }
  // 2^16 and above overflow (65520 and up round there too, below).
  if (exponent >= 127 + 16)
    return sign | 0x7c00u;
  if (exponent >= 127 - 14) {
    // A normal f16. The rebiased exponent sits right above the mantissa, so
    // rounding both together carries a mantissa overflow into the exponent,
    // and from the largest binade into infinity.
    uint32_t rebiased = ((exponent - 112) << 23) | mantissa;
    return sign | uint16_t(shiftRightRoundingToEven(rebiased, 13));
  }
  // A subnormal f16 (or zero), in units of 2^-24: |value| is
  // (2^23 + mantissa) * 2^(exponent - 150), that is (2^23 + mantissa) >>
  // (126 - exponent) units. Below 2^-25 (exponent < 102) it rounds to zero;
  // at the top it may round up to the smallest normal, 0x0400, which is the
  // right encoding.
  if (exponent < 102)
    return sign;
  return sign | uint16_t(shiftRightRoundingToEven((1u << 23) | mantissa,
                                                  126 - exponent));
}

using Widen = float (*)(uint16_t);
using Narrow = uint16_t (*)(float);

/// Copies a rows x cols matrix with leading dimension ld into a contiguous
/// f32 one.
static void widenMatrix(const uint16_t *src, int64_t rows, int64_t cols,
                        int64_t ld, float *dst, Widen widen) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      dst[i * cols + j] = widen(src[i * ld + j]);
  }
}

static void narrowMatrix(const float *src, int64_t rows, int64_t cols,
                         uint16_t *dst, int64_t ld, Narrow narrow) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      dst[i * ld + j] = narrow(src[i * cols + j]);
  }
}

/// Per-thread f32 space for widened operands. It is kept between calls
/// because a model calls the GEMM at every time step with the same sizes,
/// and grows to the largest call a thread has made.
namespace {
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { free(data); }

  /// Room for `count` floats, or null when there is no memory.
  float *get(size_t count) {
    if (count <= capacity)
      return data;
    if (count > SIZE_MAX / sizeof(float))
      return nullptr;
    // The old contents are not needed, so free-then-malloc rather than
    // realloc, which would copy them.
    free(data);
    data = static_cast<float *>(malloc(count * sizeof(float)));
    capacity = data ? count : 0;
    return data;
  }

private:
  float *data = nullptr;
  size_t capacity = 0;
};
} // namespace

static thread_local Scratch scratch;

static const char *describeDtype(int32_t dtype) {
  const char *name = rnn::runtime::dtypeName(dtype);
  return name ? name : "an unknown dtype";
}

/// Whether every size and leading dimension is one the BLAS interface
/// (32-bit int) and the layout rules accept; records why not otherwise.
static bool checkOperands(int32_t bLayout, bool aIsKM, int64_t m, int64_t n,
                          int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  if (bLayout != RNN_GEMM_B_NK && bLayout != RNN_GEMM_B_KN) {
    recordFailure(RNN_ERROR_INTERNAL,
                  "rnn_cpu_gemm: b_layout is %d, not 0 (n x k) or 1 (k x n)",
                  bLayout);
    return false;
  }
  if (m < 0 || n < 0 || k < 0) {
    recordFailure(RNN_ERROR_INTERNAL,
                  "rnn_cpu_gemm: negative size (m=%lld, n=%lld, k=%lld)",
                  (long long)m, (long long)n, (long long)k);
    return false;
  }
  int64_t aRow = aIsKM ? m : k, bRow = bLayout == RNN_GEMM_B_NK ? k : n;
  if (lda < aRow || ldb < bRow || ldc < n) {
    recordFailure(RNN_ERROR_INTERNAL,
                  "rnn_cpu_gemm: a leading dimension is shorter than its row "
                  "(lda=%lld for %lld, ldb=%lld for %lld, ldc=%lld for "
                  "n=%lld)",
                  (long long)lda, (long long)aRow, (long long)ldb,
                  (long long)bRow, (long long)ldc, (long long)n);
    return false;
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX) {
    recordFailure(RNN_ERROR_UNSUPPORTED,
                  "rnn_cpu_gemm: m=%lld, n=%lld, k=%lld, lda=%lld, ldb=%lld, "
                  "ldc=%lld: OpenBLAS takes sizes up to 2^31 - 1",
                  (long long)m, (long long)n, (long long)k, (long long)lda,
                  (long long)ldb, (long long)ldc);
    return false;
  }
  return true;
}

/// OpenBLAS, loaded on first use rather than linked: the runtime then loads
/// on machines that have no OpenBLAS (a GPU machine running CUDA models),
/// and a CPU GEMM there fails with a message instead.
struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  std::string error;
};

static const Blas &blas() {
  static const Blas loaded = [] {
    Blas result;
    void *handle = nullptr;
    for (const char *name : {"libopenblas.so.0", "libopenblas.so"})
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!handle) {
      const char *why = dlerror();
      result.error = why ? why : "libopenblas.so.0 not found";
      return result;
    }
    result.sgemm =
        reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(handle, "cblas_sgemm"));
    result.dgemm =
        reinterpret_cast<decltype(&cblas_dgemm)>(dlsym(handle, "cblas_dgemm"));
    if (!result.sgemm || !result.dgemm)
      result.error = "libopenblas.so.0 exports no cblas_sgemm/cblas_dgemm";
    return result;
  }();
  return loaded;
}

/// The bf16 and f16 pairs: widen, sgemm, narrow C if it is 16-bit too (a C
/// that is accumulated into is widened first).
static void gemm16(int32_t abDtype, int32_t cDtype, int32_t bLayout, bool aIsKM,
                   float beta, int m, int n, int k, const uint16_t *a, int lda,
                   const uint16_t *b, int ldb, void *c, int ldc) {
  bool narrowC = cDtype != RNN_F32;
  // Each product is below 2^62, so the sum cannot overflow a size_t.
  size_t count = size_t(m) * size_t(k) + size_t(n) * size_t(k) +
                 (narrowC ? size_t(m) * size_t(n) : 0);
  float *space = scratch.get(count);
  if (!space) {
    recordFailure(RNN_ERROR_OUT_OF_MEMORY,
                  "rnn_cpu_gemm: out of memory widening %s operands "
                  "(m=%d, n=%d, k=%d)",
                  describeDtype(abDtype), m, n, k);
    return;
  }
  float *a32 = space;
  float *b32 = a32 + size_t(m) * size_t(k);
  float *c32 = narrowC ? b32 + size_t(n) * size_t(k) : static_cast<float *>(c);
  int ldc32 = narrowC ? n : ldc;

  Widen widen = abDtype == RNN_BF16 ? bf16ToF32 : f16ToF32;
  // Accumulating into a 16-bit C: the sum is taken in f32 from C's widened
  // values and rounded once.
  if (narrowC && beta != 0.0f)
    widenMatrix(static_cast<const uint16_t *>(c), m, n, ldc, c32,
                cDtype == RNN_BF16 ? bf16ToF32 : f16ToF32);
  int aRows = aIsKM ? k : m, aCols = aIsKM ? m : k;
  widenMatrix(a, aRows, aCols, lda, a32, widen);
  int bRows = bLayout == RNN_GEMM_B_NK ? n : k;
  int bCols = bLayout == RNN_GEMM_B_NK ? k : n;
  widenMatrix(b, bRows, bCols, ldb, b32, widen);

  blas().sgemm(CblasRowMajor, aIsKM ? CblasTrans : CblasNoTrans,
               bLayout == RNN_GEMM_B_NK ? CblasTrans : CblasNoTrans, m, n, k,
               1.0f, a32, aCols, b32, bCols, beta, c32, ldc32);

  if (narrowC)
    narrowMatrix(c32, m, n, static_cast<uint16_t *>(c), ldc,
                 cDtype == RNN_BF16 ? f32ToBf16 : f32ToF16);
}

void rnn::runtime::clearGemmFailure() { lastFailure.status = RNN_OK; }

const GemmFailure *rnn::runtime::getGemmFailure() {
  return lastFailure.status == RNN_OK ? nullptr : &lastFailure;
}

/// rnn_cpu_gemm, with A stored k x m (and transposed) when `aIsKM`.
static void gemm(int32_t ab_dtype, int32_t c_dtype, int32_t b_layout,
                 bool aIsKM, int64_t m, int64_t n, int64_t k, int64_t a,
                 int64_t lda, int64_t b, int64_t ldb, int64_t c, int64_t ldc) {
  bool supported = (ab_dtype == RNN_F32 && c_dtype == RNN_F32) ||
                   (ab_dtype == RNN_F64 && c_dtype == RNN_F64) ||
                   ((ab_dtype == RNN_BF16 || ab_dtype == RNN_F16) &&
                    (c_dtype == RNN_F32 || c_dtype == ab_dtype));
  if (!supported) {
    recordFailure(RNN_ERROR_UNSUPPORTED,
                  "rnn_cpu_gemm: no GEMM for %s operands with a %s result "
                  "(dtype codes %d and %d)",
                  describeDtype(ab_dtype), describeDtype(c_dtype), ab_dtype,
                  c_dtype);
    return;
  }
  bool accumulate = (b_layout & RNN_GEMM_ACCUMULATE) != 0;
  b_layout &= ~RNN_GEMM_ACCUMULATE;
  if (!checkOperands(b_layout, aIsKM, m, n, k, lda, ldb, ldc))
    return;
  if (m == 0 || n == 0 || (k == 0 && accumulate))
    return;

  auto *cPtr = reinterpret_cast<char *>(c);
  if (k == 0) {
    // An empty sum. BLAS would reject lda = 0 here, so this never reaches
    // it. Zero is all-zero bits in every supported dtype.
    size_t rowBytes = size_t(n) * size_t(rnn::runtime::dtypeBytes(c_dtype));
    size_t ldBytes = size_t(ldc) * size_t(rnn::runtime::dtypeBytes(c_dtype));
    for (int64_t i = 0; i < m; ++i)
      memset(cPtr + size_t(i) * ldBytes, 0, rowBytes);
    return;
  }

  const Blas &lib = blas();
  if (!lib.sgemm || !lib.dgemm) {
    recordFailure(RNN_ERROR_UNSUPPORTED,
                  "rnn_cpu_gemm: OpenBLAS cannot be loaded (%s)",
                  lib.error.c_str());
    return;
  }
  CBLAS_TRANSPOSE transA = aIsKM ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE transB =
      b_layout == RNN_GEMM_B_NK ? CblasTrans : CblasNoTrans;
  if (ab_dtype == RNN_F32) {
    lib.sgemm(CblasRowMajor, transA, transB, int(m), int(n), int(k), 1.0f,
              reinterpret_cast<const float *>(a), int(lda),
              reinterpret_cast<const float *>(b), int(ldb),
              accumulate ? 1.0f : 0.0f, reinterpret_cast<float *>(c), int(ldc));
    return;
  }
  if (ab_dtype == RNN_F64) {
    lib.dgemm(CblasRowMajor, transA, transB, int(m), int(n), int(k), 1.0,
              reinterpret_cast<const double *>(a), int(lda),
              reinterpret_cast<const double *>(b), int(ldb),
              accumulate ? 1.0 : 0.0, reinterpret_cast<double *>(c), int(ldc));
    return;
  }
  gemm16(ab_dtype, c_dtype, b_layout, aIsKM, accumulate ? 1.0f : 0.0f, int(m),
         int(n), int(k), reinterpret_cast<const uint16_t *>(a), int(lda),
         reinterpret_cast<const uint16_t *>(b), int(ldb), cPtr, int(ldc));
}

extern "C" void rnn_cpu_gemm(int32_t ab_dtype, int32_t c_dtype,
                             int32_t b_layout, int64_t m, int64_t n, int64_t k,
                             int64_t a, int64_t lda, int64_t b, int64_t ldb,
                             int64_t c, int64_t ldc) {
  gemm(ab_dtype, c_dtype, b_layout, /*aIsKM=*/false, m, n, k, a, lda, b, ldb, c,
       ldc);
}

extern "C" void rnn_cpu_gemm_batched(int32_t ab_dtype, int32_t c_dtype,
                                     int32_t b_layout, int64_t batch, int64_t m,
                                     int64_t n, int64_t k, int64_t a,
                                     int64_t lda, int64_t stride_a, int64_t b,
                                     int64_t ldb, int64_t stride_b, int64_t c,
                                     int64_t ldc, int64_t stride_c) {
  if (batch < 0) {
    recordFailure(RNN_ERROR_INTERNAL,
                  "rnn_cpu_gemm_batched: a batch of %lld products",
                  static_cast<long long>(batch));
    return;
  }
  bool aIsKM = (b_layout & RNN_GEMM_A_KM) != 0;
  b_layout &= ~RNN_GEMM_A_KM;
  int64_t abBytes = rnn::runtime::dtypeBytes(ab_dtype);
  int64_t cBytes = rnn::runtime::dtypeBytes(c_dtype);
  for (int64_t i = 0; i < batch; ++i)
    gemm(ab_dtype, c_dtype, b_layout, aIsKM, m, n, k,
         a + i * stride_a * abBytes, lda, b + i * stride_b * abBytes, ldb,
         c + i * stride_c * cBytes, ldc);
}

extern "C" void rnn_cpu_gemm_partials(int32_t ab_dtype, int32_t c_dtype,
                                      int32_t b_layout, int64_t slices,
                                      int64_t m, int64_t n, int64_t k,
                                      int64_t a, int64_t lda, int64_t b,
                                      int64_t ldb, int64_t c, int64_t ldc) {
  if (slices < 1 || k < 0 || k % slices != 0 ||
      (b_layout != RNN_GEMM_B_NK && b_layout != RNN_GEMM_B_KN)) {
    recordFailure(RNN_ERROR_UNSUPPORTED,
                  "rnn_cpu_gemm_partials: %lld slices of k=%lld with "
                  "b_layout %d (want slices dividing k and layout 0 or 1)",
                  static_cast<long long>(slices), static_cast<long long>(k),
                  b_layout);
    return;
  }
  int64_t slice = k / slices;
  int64_t abBytes = rnn::runtime::dtypeBytes(ab_dtype);
  int64_t cBytes = rnn::runtime::dtypeBytes(c_dtype);
  // Slice s reads K columns s·slice.. of A and, of B, the same columns
  // (n x k) or rows (k x n).
  int64_t bSliceStride = b_layout == RNN_GEMM_B_KN ? slice * ldb : slice;
  for (int64_t s = 0; s < slices; ++s)
    rnn_cpu_gemm(ab_dtype, c_dtype, b_layout, m, n, slice,
                 a + s * slice * abBytes, lda, b + s * bSliceStride * abBytes,
                 ldb, c + s * m * ldc * cBytes, ldc);
}
