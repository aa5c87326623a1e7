//===- CarryRecurrentProducts.cpp - Carry U·s instead of s ----------------===//
//
// An LSTM with a projection computes r = m·W_hrᵀ at the end of a step and
// r·Uᵀ at the start of the next: two GEMMs in a row on the recurrence's
// critical path, each too small to fill the GPU. Carrying q = r·Uᵀ instead
// (its next value is m·(U·W_hr)ᵀ, and U·W_hr is computed once per call)
// leaves two matmuls that both read m, which concat-gate-matmuls then
// merges into one GEMM per step.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "CellSignature.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rnn {
#define GEN_PASS_DEF_CARRYRECURRENTPRODUCTS
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

Type elementType(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// Whether `matmul` is rows times a parameter of the cell, without `acc`,
/// with every operand and the result of element type `element`.
bool isParamMatmul(CellOp cell, MatmulOp matmul, Type element) {
  auto weight = dyn_cast<BlockArgument>(matmul.getRhs());
  return weight && weight.getOwner() == &cell.getBodyBlock() &&
         cell.isParamIndex(weight.getArgNumber()) && !matmul.getAcc() &&
         elementType(matmul.getLhs()) == element &&
         elementType(matmul.getRhs()) == element &&
         elementType(matmul.getResult()) == element;
}

/// The matmuls `s·Uᵀ` through which the cell reads `state`, when those are
/// its only uses (U a parameter in [out, in] layout); empty otherwise.
SmallVector<MatmulOp> recurrentMatmuls(CellOp cell, BlockArgument state) {
  SmallVector<MatmulOp> matmuls;
  Type element = elementType(state);
  for (OpOperand &use : state.getUses()) {
    auto matmul = dyn_cast<MatmulOp>(use.getOwner());
    if (!matmul || use.getOperandNumber() != 0 || matmul.getWeightInOut() ||
        !isParamMatmul(cell, matmul, element))
      return {};
    matmuls.push_back(matmul);
  }
  return matmuls;
}

struct CarryRecurrentProductsPass
    : public rnn::impl::CarryRecurrentProductsBase<CarryRecurrentProductsPass> {
  using Base::Base;

  void runOnOperation() override {
    editCells(getOperation(), [&](CellOp cell, CellSignatureEditor &editor) {
      if (carryProducts(cell, editor) == 0)
        return;
      // U·W_hr depends on parameters alone: computed once per application.
      hoistParameterOnlyOps(editor);
      eraseDeadOps(cell.getBodyBlock(),
                   [](Operation *op) { return isPure(op); });
    });
  }

  /// Rewrites every eligible state of `cell`; returns how many products are
  /// now carried.
  unsigned carryProducts(CellOp cell, CellSignatureEditor &editor) {
    YieldOp yield = cell.getYield();
    struct Candidate {
      BlockArgument state;
      MatmulOp next;
      SmallVector<MatmulOp> uses;
    };
    SmallVector<Candidate> candidates;
    for (auto [index, state] : llvm::enumerate(cell.getStateArgs())) {
      Type element = elementType(state);
      if (!element.isF32() && !element.isF64())
        continue;
      auto next = yield.getStates()[index].getDefiningOp<MatmulOp>();
      if (!next || !isParamMatmul(cell, next, element))
        continue;
      SmallVector<MatmulOp> uses = recurrentMatmuls(cell, state);
      if (uses.empty())
        continue;
      // The product has H columns where U has P: H / P times the work.
      if (static_cast<double>(next.getContractionSize()) >
          maxCostRatio * static_cast<double>(next.getOutputSize()))
        continue;
      candidates.push_back({state, next, std::move(uses)});
    }

    // New states go after the existing ones (the block's arguments shift,
    // which is why the candidates were collected first).
    SmallVector<Value> newStates(yield.getStates());
    unsigned carried = 0;
    for (Candidate &candidate : candidates) {
      BlockArgument state = candidate.state;
      MatmulOp next = candidate.next;
      Type element = elementType(state);
      for (MatmulOp use : candidate.uses) {
        auto recurrentWeight = cast<BlockArgument>(use.getRhs());
        BlockArgument product = editor.appendState(
            use.getType(), [&](OpBuilder &builder, Operation *application) {
              Value init = editor.getOperandFor(application, state);
              Value weight = editor.getOperandFor(application, recurrentWeight);
              auto initType = cast<RankedTensorType>(init.getType());
              auto type =
                  cast<RankedTensorType>(use.getType())
                      .clone({initType.getDimSize(0), use.getOutputSize()});
              return MatmulOp::create(builder, use.getLoc(), type, init, weight,
                                      Value(), /*weight_in_out=*/false,
                                      use.getAllowTf32())
                  .getResult();
            });
        use.getResult().replaceAllUsesWith(product);

        // (U·W_hr) as an [N, H] weight: U [N, P] times W_hr, whose stored
        // layout decides whether it is read as is or transposed. In TF32
        // only where both matmuls it stands for allow TF32: then the cell
        // already accepted that precision for these weights, and the
        // product costs a tenth of a full-precision one on the GPU.
        OpBuilder builder(yield);
        int64_t n = use.getOutputSize(), h = next.getContractionSize();
        auto productWeightType = RankedTensorType::get({n, h}, element);
        Value productWeight =
            MatmulOp::create(builder, use.getLoc(), productWeightType,
                             use.getRhs(), next.getRhs(), Value(),
                             /*weight_in_out=*/!next.getWeightInOut(),
                             use.getAllowTf32() && next.getAllowTf32())
                .getResult();
        newStates.push_back(
            MatmulOp::create(builder, use.getLoc(), use.getType(),
                             next.getLhs(), productWeight, Value(),
                             /*weight_in_out=*/false, use.getAllowTf32())
                .getResult());
        use.erase();
        ++carried;
        ++numCarried;
      }
    }
    if (carried) {
      OpBuilder builder(yield);
      YieldOp::create(builder, yield.getLoc(), yield.getOutputs(), newStates);
      yield.erase();
    }
    return carried;
  }
};

} // namespace
