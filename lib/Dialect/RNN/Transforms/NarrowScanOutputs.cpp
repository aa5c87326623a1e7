//===- NarrowScanOutputs.cpp - Store an output in the type it is read in --===//
//
// The backward of a bf16 LSTM emits its gate gradients in f32, one row a
// step, and after the loop casts the whole [T, B, 4H] sequence to bf16 for
// the GEMMs of the input and weight gradients: a kernel that reads 4 bytes
// and writes 2 per element, and a sequence stored at twice the size it is
// read at. Where every reader of a cell's output casts it to one narrower
// type, the cell yields the cast instead: the cast joins the step's fused
// kernel (which often computes the same cast for a matmul of its own), the
// sequence is stored narrow, and the values are the same (a cast is a cast
// wherever it runs).
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "CellSignature.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

namespace rnn {
#define GEN_PASS_DEF_NARROWSCANOUTPUTS
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// The element type that every reader of result `index` of every
/// application casts it to, where it is narrower than the output's and
/// there is at least one reader; null otherwise.
Type narrowerReadType(ArrayRef<Operation *> applications, unsigned index) {
  Type target;
  for (Operation *application : applications)
    for (Operation *user : application->getResult(index).getUsers()) {
      auto cast = dyn_cast<CastOp>(user);
      if (!cast)
        return {};
      Type element = cast.getType().getElementType();
      if (target && element != target)
        return {};
      target = element;
    }
  if (!target)
    return {};
  Type element =
      cast<RankedTensorType>(applications.front()->getResult(index).getType())
          .getElementType();
  return target.getIntOrFloatBitWidth() < element.getIntOrFloatBitWidth()
             ? target
             : Type();
}

struct NarrowScanOutputsPass
    : public rnn::impl::NarrowScanOutputsBase<NarrowScanOutputsPass> {
  void runOnOperation() override {
    SmallVector<CellOp> cells(getOperation().getOps<CellOp>());
    for (CellOp cell : cells) {
      FailureOr<CellSignatureEditor> editor = CellSignatureEditor::create(cell);
      if (failed(editor) || editor->getApplications().empty())
        continue;
      YieldOp yield = cell.getYield();
      SmallVector<Value> outputs(yield.getOutputs());
      bool changed = false;
      for (auto [index, output] : llvm::enumerate(outputs)) {
        Type target = narrowerReadType(editor->getApplications(), index);
        if (!target)
          continue;
        // The cell may round the value already (for a matmul of its own):
        // one cast serves both.
        auto type = cast<RankedTensorType>(output.getType()).clone(target);
        auto existing = llvm::find_if(output.getUsers(), [&](Operation *user) {
          return isa<CastOp>(user) && user->getResult(0).getType() == type;
        });
        OpBuilder builder(yield);
        output =
            existing != output.getUsers().end()
                ? Value((*existing)->getResult(0))
                : Value(CastOp::create(builder, yield.getLoc(), type, output));
        editor->narrowOutput(index, target);
        changed = true;
        ++numNarrowed;
      }
      if (!changed)
        continue;
      OpBuilder builder(yield);
      YieldOp::create(builder, yield.getLoc(), outputs, yield.getStates());
      yield.erase();
      editor->commit();
    }
  }
};

} // namespace
