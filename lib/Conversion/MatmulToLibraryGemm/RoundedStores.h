//===- RoundedStores.h - Products stored rounded by the call ----*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_ROUNDEDSTORES_H
#define RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_ROUNDEDSTORES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace rnn::gemm {

/// A product that is stored in f32 only to be rounded: `rounding`, the one op
/// besides the product's fill, its contraction and its deallocation that
/// reads the product's buffer (directly or through `collapse`, a reshape
/// that nothing else reads), is a linalg.generic that rounds it
/// (arith.truncf), element by element, into `target`, later in the same
/// block with nothing in between that touches `target`. The GEMM can then
/// store the rounded product in `target` itself (cuBLAS and the CPU GEMM
/// accumulate in f32 and round once at the store, as the cast did).
struct RoundedStore {
  mlir::linalg::GenericOp rounding;
  mlir::memref::CollapseShapeOp collapse;
  mlir::Value target;
  mlir::memref::AllocOp alloc;
  mlir::memref::DeallocOp dealloc;
  /// The target's allocation, where it comes after the contraction: moved
  /// before it when the rewrite happens.
  mlir::memref::AllocOp moveTarget;

  /// Where the GEMM writes, at `builder`: the target in the product's
  /// shape, its allocation moved there first where it came after.
  mlir::Value prepareTarget(mlir::OpBuilder &builder, mlir::Location loc);

  /// The rounding again at `builder` (the fallback of a run-time check).
  void cloneRounding(mlir::OpBuilder &builder);
};

/// The rounded store of `contraction`'s product (zero-filled by `fill`), or
/// nothing where the product is read otherwise.
std::optional<RoundedStore>
findRoundedStore(mlir::linalg::GenericOp contraction,
                 mlir::linalg::FillOp fill);

/// Erases the rounding that the call does now, and the product's buffer
/// where nothing else (a fallback) writes it.
void eraseRounding(RoundedStore &rounded);

} // namespace rnn::gemm

#endif // RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_ROUNDEDSTORES_H
