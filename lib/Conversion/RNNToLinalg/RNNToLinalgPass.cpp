//===- RNNToLinalgPass.cpp - The convert-rnn-to-linalg pass ---------------===//

#include "Lowering.h"

#include "rnn/Conversion/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTRNNTOLINALG
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

struct ConvertRNNToLinalgPass
    : public rnn::impl::ConvertRNNToLinalgBase<ConvertRNNToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;

    // Applications first: they inline the cells' bodies.
    SmallVector<Operation *> applications;
    module.walk([&](Operation *op) {
      if (isa<ScanOp, StepOp>(op))
        applications.push_back(op);
    });
    for (Operation *op : applications) {
      auto name = isa<ScanOp>(op) ? cast<ScanOp>(op).getCellAttr()
                                  : cast<StepOp>(op).getCellAttr();
      auto cell = symbols.lookupNearestSymbolFrom<CellOp>(op, name);
      LogicalResult lowered = isa<ScanOp>(op)
                                  ? lowering::lowerScan(cast<ScanOp>(op), cell)
                                  : lowering::lowerStep(cast<StepOp>(op), cell);
      if (failed(lowered))
        return signalPassFailure();
    }
    for (CellOp cell : llvm::make_early_inc_range(module.getOps<CellOp>()))
      cell.erase();

    // Then every op of the dialect that the inlining left in functions.
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<RNNDialect>(op->getDialect()) &&
          !op->getParentOfType<PointwiseOp>())
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      FailureOr<SmallVector<Value>> replacements =
          lowering::lowerOp(b, op);
      if (failed(replacements)) {
        op->emitOpError("has no lowering to linalg");
        return signalPassFailure();
      }
      op->replaceAllUsesWith(*replacements);
      op->erase();
    }
    lowering::reuseLoopCarriedDestinations(module);
    lowering::writeSequenceRowsInPlace(module);
    lowering::markArgumentsReadOnly(module);
  }
};

} // namespace
