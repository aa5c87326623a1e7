//===- ReduceMatmulPrecision.cpp - Reduced-precision matmul products ------===//
//
// bf16 storage halves the bytes every GEMM streams and runs on the tensor
// cores at full rate, and is how models are trained and served; the state
// and the gate math stay in f32, where the recurrence's error would
// otherwise accumulate. This pass turns a model written in f32 into that
// form: only the matmuls' operands change. `tf32` keeps f32 operands and
// lets the products use TF32 tensor-core arithmetic (PyTorch's default for
// cuDNN's recurrences in float32).
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

namespace rnn {
#define GEN_PASS_DEF_REDUCEMATMULPRECISION
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// Whether `product` (an rnn.matmul or rnn.headwise_matmul: lhs and rhs
/// are its first two operands) reads f32 operands.
bool isF32Product(Operation *product) {
  return llvm::all_of(product->getOperands().take_front(2), [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType().isF32();
  });
}

/// Calls `fn` on every dense and head-wise product under `root`.
template <typename Fn> void forEachProduct(Operation *root, Fn fn) {
  root->walk([&](Operation *op) {
    if (auto matmul = dyn_cast<MatmulOp>(op))
      fn(matmul);
    else if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op))
      fn(headwise);
  });
}

struct ReduceMatmulPrecisionPass
    : public rnn::impl::ReduceMatmulPrecisionBase<ReduceMatmulPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    Builder builder(&getContext());
    if (elementType == "tf32") {
      // TF32 keeps f32 operands and storage; only the products' arithmetic
      // changes, which the matmul's own attribute says.
      forEachProduct(getOperation(), [&](auto product) {
        if (isF32Product(product) && !product.getAllowTf32()) {
          product.setAllowTf32(true);
          ++numReduced;
        }
      });
      return;
    }
    Type reduced;
    if (elementType == "bf16")
      reduced = builder.getBF16Type();
    else if (elementType == "f16")
      reduced = builder.getF16Type();
    if (!reduced) {
      getOperation().emitError()
          << "rnn-reduce-matmul-precision: element-type must be bf16, f16 or "
             "tf32, not '"
          << elementType << "'";
      return signalPassFailure();
    }
    forEachProduct(getOperation(), [&](auto product) {
      if (!isF32Product(product))
        return;
      auto lhsType = cast<RankedTensorType>(product.getLhs().getType());
      auto rhsType = cast<RankedTensorType>(product.getRhs().getType());
      OpBuilder b(product);
      Value lhs = CastOp::create(b, product.getLoc(), lhsType.clone(reduced),
                                 product.getLhs());
      Value rhs = CastOp::create(b, product.getLoc(), rhsType.clone(reduced),
                                 product.getRhs());
      product.getLhsMutable().assign(lhs);
      product.getRhsMutable().assign(rhs);
      product.setAllowTf32(false);
      ++numReduced;
    });
  }
};

} // namespace
