//===- MemrefCopy.cpp - The strided copy compiled code calls --------------===//
//
// MLIR lowers a memref.copy between buffers that are not both contiguous to
// a call of `memrefCopy(elementSize, source, target)` on unranked
// descriptors. Compiled models need it (a loop's result copied into a
// caller's output buffer, say), so the runtime provides it.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// MLIR's unranked memref descriptor: a rank and a pointer to the ranked
/// descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct UnrankedDescriptor {
  int64_t rank;
  void *descriptor;
};

struct RankedView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

RankedView view(const UnrankedDescriptor &d) {
  auto *words = static_cast<int64_t *>(d.descriptor);
  RankedView v;
  v.aligned = reinterpret_cast<char *>(words[1]);
  v.offset = words[2];
  v.sizes = words + 3;
  v.strides = words + 3 + d.rank;
  return v;
}
} // namespace

extern "C" __attribute__((visibility("default"))) void
memrefCopy(int64_t elementSize, UnrankedDescriptor *source,
           UnrankedDescriptor *target) {
  int64_t rank = source->rank;
  RankedView src = view(*source), dst = view(*target);
  char *from = src.aligned + src.offset * elementSize;
  char *to = dst.aligned + dst.offset * elementSize;
  if (rank == 0) {
    std::memcpy(to, from, elementSize);
    return;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (src.sizes[d] == 0)
      return;
  // Odometer over all indices but the last; the last axis is a strided run.
  std::vector<int64_t> index(rank, 0);
  int64_t last = rank - 1;
  while (true) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (int64_t d = 0; d < last; ++d) {
      srcOffset += index[d] * src.strides[d];
      dstOffset += index[d] * dst.strides[d];
    }
    if (src.strides[last] == 1 && dst.strides[last] == 1) {
      std::memcpy(to + dstOffset * elementSize, from + srcOffset * elementSize,
                  src.sizes[last] * elementSize);
    } else {
      for (int64_t i = 0; i < src.sizes[last]; ++i)
        std::memcpy(to + (dstOffset + i * dst.strides[last]) * elementSize,
                    from + (srcOffset + i * src.strides[last]) * elementSize,
                    elementSize);
    }
    int64_t d = last - 1;
    while (d >= 0 && ++index[d] == src.sizes[d])
      index[d--] = 0;
    if (d < 0)
      return;
  }
}
