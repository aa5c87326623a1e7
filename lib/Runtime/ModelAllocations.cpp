//===- ModelAllocations.cpp - Allocations of compiled CPU models ----------===//
//
// The failing allocation is deep inside the model's code, which has no way to
// report it; the guard leaves that code with longjmp. Nothing between the
// guard and the allocation has anything to unwind: the frames are the
// model's own (compiled from MLIR, no destructors) and the allocation
// function, which holds no objects at the jump.
//
//===----------------------------------------------------------------------===//

#include "ModelAllocations.h"

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

struct Guard {
  std::jmp_buf env;
  std::vector<void *> live; // the call's allocations not yet freed
  size_t failedBytes = 0;
};

thread_local Guard *current = nullptr;

[[noreturn]] void fail(Guard &guard, size_t bytes) {
  guard.failedBytes = bytes;
  std::longjmp(guard.env, 1);
}

void *track(void *pointer, size_t bytes) {
  Guard *guard = current;
  if (!guard)
    return pointer;
  if (!pointer && bytes)
    fail(*guard, bytes);
  bool recorded = true;
  try {
    guard->live.push_back(pointer);
  } catch (const std::bad_alloc &) {
    recorded = false;
  }
  if (!recorded) {
    std::free(pointer);
    fail(*guard, bytes);
  }
  return pointer;
}

} // namespace

extern "C" __attribute__((visibility("default"))) void *
_mlir_memref_to_llvm_alloc(size_t bytes) {
  return track(std::malloc(bytes), bytes);
}

extern "C" __attribute__((visibility("default"))) void *
_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  void *pointer = nullptr;
  if (posix_memalign(&pointer, std::max(alignment, sizeof(void *)), bytes))
    pointer = nullptr;
  return track(pointer, bytes);
}

extern "C" __attribute__((visibility("default"))) void
_mlir_memref_to_llvm_free(void *pointer) {
  if (Guard *guard = current) {
    auto it = std::find(guard->live.rbegin(), guard->live.rend(), pointer);
    if (it != guard->live.rend()) {
      *it = guard->live.back();
      guard->live.pop_back();
    }
  }
  std::free(pointer);
}

bool rnn::runtime::runWithAllocationGuard(void (*call)(void **),
                                          void **descriptors,
                                          size_t &failedBytes) {
  Guard guard;
  Guard *outer = current;
  current = &guard;
  if (setjmp(guard.env) == 0) {
    call(descriptors);
    current = outer;
    return true;
  }
  current = outer;
  for (void *pointer : guard.live)
    std::free(pointer);
  failedBytes = guard.failedBytes;
  return false;
}
