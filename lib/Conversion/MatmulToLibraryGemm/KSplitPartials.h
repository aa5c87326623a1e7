//===- KSplitPartials.h - Products split into K-slice partials --*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_KSPLITPARTIALS_H
#define RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_KSPLITPARTIALS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace rnn::gemm {

/// A product to split: the contraction, the zero fill before it, the
/// elementwise generic that reads its result (the inputs `consumerInputs`:
/// the result itself or windows of it, such as the gates of concatenated
/// matmuls) and the number of slices. Where the consumer follows in the same
/// step, the result's allocation and deallocation; where it reads the
/// product in the next step (the product ends the loop body and writes a
/// buffer from outside the loop), `loop`, and whether the product adds onto
/// what the consumer wrote into it (no fill then).
struct PartialsPlan {
  mlir::linalg::GenericOp contraction, consumer;
  mlir::linalg::FillOp fill;
  mlir::memref::AllocOp alloc;
  mlir::memref::DeallocOp dealloc;
  mlir::scf::ForOp loop;
  llvm::SmallVector<unsigned> consumerInputs;
  /// Per consumer input, the window it reads (null: the whole product).
  llvm::SmallVector<mlir::memref::SubViewOp> windows;
  int64_t slices = 0;
  bool accumulates = false;
};

/// The plan for `contraction` split into about `kPartials` K slices, or
/// nothing when it does not qualify (Passes.td says when it does).
std::optional<PartialsPlan> planPartials(mlir::linalg::GenericOp contraction,
                                         int64_t kPartials);

/// Rewrites one planned product: under a run-time check of the batch, the
/// partials call (`callee`, with `layoutFlags` as its b_layout) and the
/// consumer adding them up; else the product and consumer as they were.
void splitIntoPartials(PartialsPlan plan, mlir::func::FuncOp callee,
                       int32_t layoutFlags);

} // namespace rnn::gemm

#endif // RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_KSPLITPARTIALS_H
