//===- ModelAllocations.h - Allocations of compiled CPU models --*- C++ -*-===//
//
// Compiled CPU models allocate their buffers through MLIR's generic
// allocation functions (finalize-memref-to-llvm{use-generic-functions}),
// which the runtime defines. Inside runWithAllocationGuard, an allocation
// the system refuses ends the call: the model's code would otherwise use a
// null pointer. The guard frees what the call had allocated, and the call
// reports RNN_ERROR_OUT_OF_MEMORY.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_RUNTIME_MODELALLOCATIONS_H
#define RNN_LIB_RUNTIME_MODELALLOCATIONS_H

#include <cstddef>

namespace rnn::runtime {

/// Runs `call(descriptors)`. Returns false when an allocation of the call
/// failed; `failedBytes` is then its size and everything the call had
/// allocated is freed.
bool runWithAllocationGuard(void (*call)(void **), void **descriptors,
                            size_t &failedBytes);

} // namespace rnn::runtime

#endif // RNN_LIB_RUNTIME_MODELALLOCATIONS_H
