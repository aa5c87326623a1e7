//===- PackedGemm.cpp - Recurrent GEMMs on weights packed per call --------===//
//
// When: cuBLAS streams a large recurrent weight matrix from memory at about
// 2.3 TB/s on the H100. With the weights in 20 bits our kernel does the
// LSTM's `wide` GEMM (M = 32, N = 8192, K = 2048: 64 MiB of fp32 weights) in
// 22.0 µs against cuBLAS's 29.0, and a step with the pointwise kernel and
// the packing amortised over 50 steps in 25.3 against 31.7 µs; the GRU's
// (N = 6144, 48 MiB, about the size of the 50 MiB L2) in 20.3 against 22.1
// (docs/performance-notes.md). Weights that fit well inside L2
// are read from L2 at every step, where cuBLAS is faster (an older version
// of the kernel took 17.6 against 7.1 µs at `medium`, 16 MiB), and a grid
// over more than one wave lost too (N = 16384, K = 4096): the kernel runs
// only for weights of at least 90% of L2 whose grid fits on the GPU at once.
// The backward's recurrent product reads the same weights as a [K, N] matrix:
// it gets a packed copy of their transpose, and its K-slice partials are the
// K parts of the kernel's grid (LSTM `wide`: 20.8 against cuBLAS's 27.2 µs a
// step on the H100). It gains from 75% of L2: the GRU's 48 MiB fill 80% of
// an H200's 60 MiB, where its forward product on the kernel lost (the `wide`
// forward 1.151 against 1.128 ms on cuBLAS) and its training step gained
// (2.49-2.51 against 2.67 ms with the backward's product on the kernel).
//
//===----------------------------------------------------------------------===//

#include "PackedGemm.h"

#include "CudaErrors.h"
#include "RuntimeKernels.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace rnn::cuda {
namespace {

// The kernel's tiling (PackedTf32Gemm.cu).
constexpr int64_t kBlockColumns = 128, kWarpsPerK = 4, kThreads = 512;
constexpr int64_t kRingBytes =
    16 /*warps*/ * 2 /*stages*/ * 4 /*n-tiles*/ * 32 * (16 + 4);

/// Shared memory of a block: A's rows for its 1/split of K, then the warps'
/// rings (the partial tiles reuse the space afterwards).
int64_t sharedBytes(int64_t rows, int64_t k, int64_t split) {
  int64_t staged = rows * (k / split + 4) * 4 + kRingBytes;
  return std::max(staged, kWarpsPerK * rows * kBlockColumns * 4);
}

/// Whether the kernel tiles k in `split` parts.
bool splitsK(int64_t k, int64_t split) {
  return k % (32 * kWarpsPerK * split) == 0;
}

/// The GEMM's launch over `columnBlocks` column blocks and `split` K parts,
/// in clusters of the `split` blocks of a column range unless `clustered`
/// is false. `cluster` holds the attribute the result points to.
CUlaunchConfig gemmLaunch(int64_t columnBlocks, int64_t split, int64_t shared,
                          bool clustered, CUstream stream,
                          CUlaunchAttribute &cluster) {
  cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 1;
  cluster.value.clusterDim.y = static_cast<unsigned>(split);
  cluster.value.clusterDim.z = 1;
  CUlaunchConfig config = {};
  config.gridDimX = static_cast<unsigned>(columnBlocks);
  config.gridDimY = static_cast<unsigned>(split);
  config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = static_cast<unsigned>(shared);
  config.hStream = stream;
  config.attrs = clustered ? &cluster : nullptr;
  config.numAttrs = clustered ? 1 : 0;
  return config;
}

/// How many clusters of `split` blocks of `kernel`, `shared` bytes each, the
/// GPU runs at once: a cluster's blocks share a GPC, so there can be fewer
/// than SMs / split where a GPC's SMs do not divide into clusters. Asked
/// once per thread and size.
int64_t activeClusters(CUfunction kernel, int64_t split, int64_t shared) {
  thread_local std::vector<std::tuple<CUfunction, int64_t, int64_t, int>> known;
  for (auto &[function, parts, bytes, count] : known)
    if (function == kernel && parts == split && bytes == shared)
      return count;
  CUlaunchAttribute cluster;
  CUlaunchConfig config =
      gemmLaunch(1, split, shared, /*clustered=*/true, nullptr, cluster);
  int count = 0;
  if (cuOccupancyMaxActiveClusters(&count, kernel, &config) != CUDA_SUCCESS)
    count = 0;
  known.emplace_back(kernel, split, shared, count);
  return count;
}

/// Weights packed during the current model call, on one stream: the lanes
/// of a layer wavefront (StreamLanes.h) run on streams of their own, and a
/// copy packed on one is not ordered before the GEMMs of another.
struct PackedWeights {
  CUdeviceptr weights;
  int64_t n, k, ldb;
  bool kn;
  CUstream stream;
  CUdeviceptr upper, lower;
};

struct CallState {
  bool active = false;
  std::vector<PackedWeights> packed;
};
thread_local CallState call;

/// The packed copy of B for this call, packing it on first use.
const PackedWeights *packedWeights(const RuntimeKernels &kernels, CUdeviceptr b,
                                   int64_t n, int64_t k, int64_t ldb, bool kn,
                                   CUstream stream) {
  for (const PackedWeights &entry : call.packed)
    if (entry.weights == b && entry.n == n && entry.k == k &&
        entry.ldb == ldb && entry.kn == kn && entry.stream == stream)
      return &entry;
  PackedWeights entry{b, n, k, ldb, kn, stream, 0, 0};
  if (!check(cuMemAllocAsync(&entry.upper, n * k * 2, stream),
             "cuMemAllocAsync"))
    return nullptr;
  if (!check(cuMemAllocAsync(&entry.lower, n * k / 2, stream),
             "cuMemAllocAsync")) {
    cuMemFreeAsync(entry.upper, stream);
    return nullptr;
  }
  call.packed.push_back(entry);
  int64_t threads = n / 8 * (k / 32) * 32;
  int nInt = static_cast<int>(n), kInt = static_cast<int>(k),
      knInt = kn ? 1 : 0;
  void *params[] = {&entry.weights, &entry.ldb,   &nInt,       &kInt,
                    &knInt,         &entry.upper, &entry.lower};
  if (!check(cuLaunchKernel(kernels.packWeights, (threads + 255) / 256, 1, 1,
                            256, 1, 1, 0, stream, params, nullptr),
             "cuLaunchKernel (weight packing)"))
    return nullptr;
  return &call.packed.back();
}

} // namespace

void beginPackedWeightsCall(bool enabled) {
  call.active = enabled;
  call.packed.clear();
}

void endPackedWeightsCall(CUstream stream) {
  for (const PackedWeights &entry : call.packed) {
    cuMemFreeAsync(entry.upper, stream);
    cuMemFreeAsync(entry.lower, stream);
  }
  call.packed.clear();
  call.active = false;
}

bool tryPackedGemm(int64_t m, int64_t n, int64_t k, CUdeviceptr a, int64_t lda,
                   CUdeviceptr b, int64_t ldb, bool bIsKN, CUdeviceptr c,
                   int64_t ldc, bool accumulate, int64_t slices,
                   CUstream stream) {
  if (!call.active || m < 1 || m > 32 || n % kBlockColumns != 0 ||
      a % 16 != 0 || lda % 4 != 0 || lda < k || ldc < n ||
      ldb < (bIsKN ? n : k) || n > (int64_t{1} << 30) ||
      k > (int64_t{1} << 30) || (slices > 1 && accumulate))
    return false;
  const RuntimeKernels *kernels = currentKernels();
  if (!kernels || !kernels->packedUsable)
    return false;
  // At least 90% of L2, 75% for the backward's product (see above).
  int64_t l2 = kernels->l2Bytes;
  if (n * k * 4 < l2 - l2 / (bIsKN ? 4 : 10))
    return false;
  // K in as many parts as fill the GPU in one wave (a grid past one wave
  // lost, and too few blocks do not reach the memory's bandwidth): the K
  // slices of partials, each block writing its own; else 8, 4 or 2 parts,
  // added up in clusters that all run at once.
  int64_t rows = m <= 16 ? 16 : 32, columnBlocks = n / kBlockColumns;
  CUfunction kernel =
      rows == 16 ? kernels->packedGemm16 : kernels->packedGemm32;
  auto fits = [&](int64_t split) {
    return splitsK(k, split) &&
           columnBlocks * split <= kernels->multiprocessors &&
           sharedBytes(rows, k, split) <= kernels->sharedBytesOptIn;
  };
  int64_t split = 0;
  if (slices > 1)
    split = fits(slices) ? slices : 0;
  else
    for (int64_t candidate : {8, 4, 2})
      if (fits(candidate) &&
          activeClusters(kernel, candidate, sharedBytes(rows, k, candidate)) >=
              columnBlocks) {
        split = candidate;
        break;
      }
  if (!split)
    return false;
  // From here on the GEMM is ours: a failure is recorded, not retried.
  const PackedWeights *packed =
      packedWeights(*kernels, b, n, k, ldb, bIsKN, stream);
  if (!packed)
    return true;

  CUlaunchAttribute cluster;
  CUlaunchConfig config =
      gemmLaunch(columnBlocks, split, sharedBytes(rows, k, split),
                 /*clustered=*/slices <= 1, stream, cluster);
  CUdeviceptr upper = packed->upper, lower = packed->lower;
  int mInt = static_cast<int>(m), kInt = static_cast<int>(k),
      accumulateInt = accumulate ? 1 : 0;
  int64_t partialStride = slices > 1 ? m * ldc : 0;
  void *params[] = {&a,   &lda,  &upper, &lower,         &c,
                    &ldc, &mInt, &kInt,  &accumulateInt, &partialStride};
  check(cuLaunchKernelEx(&config, kernel, params, nullptr),
        "cuLaunchKernelEx (packed TF32 GEMM)");
  return true;
}

} // namespace rnn::cuda
