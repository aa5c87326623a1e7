//===- ReduceMatmulPrecision.cpp - bf16/f16 operands, f32 accumulation ----===//
//
// bf16 storage halves the bytes every GEMM streams and runs on the tensor
// cores at full rate, and is how models are trained and served; the state
// and the gate math stay in f32, where the recurrence's error would
// otherwise accumulate. This pass turns a model written in f32 into that
// form: only the matmuls' operands change.
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

struct ReduceMatmulPrecisionPass
    : public rnn::impl::ReduceMatmulPrecisionBase<ReduceMatmulPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    Builder builder(&getContext());
    Type reduced;
    if (elementType == "bf16")
      reduced = builder.getBF16Type();
    else if (elementType == "f16")
      reduced = builder.getF16Type();
    if (!reduced) {
      getOperation().emitError()
          << "rnn-reduce-matmul-precision: element-type must be bf16 or f16, "
             "not '"
          << elementType << "'";
      return signalPassFailure();
    }
    getOperation().walk([&](MatmulOp matmul) {
      auto lhsType = cast<RankedTensorType>(matmul.getLhs().getType());
      auto rhsType = cast<RankedTensorType>(matmul.getRhs().getType());
      if (!lhsType.getElementType().isF32() ||
          !rhsType.getElementType().isF32())
        return;
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
