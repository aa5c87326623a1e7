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

bool isF32Matmul(MatmulOp matmul) {
  return cast<RankedTensorType>(matmul.getLhs().getType())
             .getElementType()
             .isF32() &&
         cast<RankedTensorType>(matmul.getRhs().getType())
             .getElementType()
             .isF32();
}

struct ReduceMatmulPrecisionPass
    : public rnn::impl::ReduceMatmulPrecisionBase<ReduceMatmulPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    Builder builder(&getContext());
    if (elementType == "tf32") {
      // TF32 keeps f32 operands and storage; only the products' arithmetic
      // changes, which the matmul's own attribute says.
      getOperation().walk([&](MatmulOp matmul) {
        if (isF32Matmul(matmul) && !matmul.getAllowTf32()) {
          matmul.setAllowTf32(true);
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
    getOperation().walk([&](MatmulOp matmul) {
      if (!isF32Matmul(matmul))
        return;
      auto lhsType = cast<RankedTensorType>(matmul.getLhs().getType());
      auto rhsType = cast<RankedTensorType>(matmul.getRhs().getType());
      OpBuilder b(matmul);
      Value lhs = CastOp::create(b, matmul.getLoc(), lhsType.clone(reduced),
                                 matmul.getLhs());
      Value rhs = CastOp::create(b, matmul.getLoc(), rhsType.clone(reduced),
                                 matmul.getRhs());
      matmul.getLhsMutable().assign(lhs);
      matmul.getRhsMutable().assign(rhs);
      matmul.setAllowTf32(false);
      ++numReduced;
    });
  }
};

} // namespace
