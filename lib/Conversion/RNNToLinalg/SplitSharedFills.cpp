//===- SplitSharedFills.cpp - One zero-filled init per product ------------===//
//
// CSE merges the identical zero fills that two products of one shape start
// from (a backward's two weight gradients, [4H, H] each when I = H): one
// fill, two ops that write into it. One-Shot Bufferize then keeps the fill
// in one buffer and gives the second product a copy of it, so neither
// product sees a fill right before it: the library GEMM reads and adds the
// zeros (beta = 1) instead of overwriting, after a copy of the whole
// matrix. Each writer gets a fill of its own, placed right before it.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace rnn {
#define GEN_PASS_DEF_SPLITSHAREDFILLS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

struct SplitSharedFillsPass
    : public rnn::impl::SplitSharedFillsBase<SplitSharedFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse())
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      Value filled = fill->getResult(0);
      // The ops that write into the fill (it is their init); a reader
      // alone does not conflict with anything.
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : filled.getUses())
        if (auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
            dps && dps.isDpsInit(&use))
          inits.push_back(&use);
      // Every writer gets its own, right before it (a tensor.empty
      // destination is cloned with it); the original stays for readers.
      if (inits.empty())
        continue;
      for (OpOperand *init : inits) {
        Operation *user = init->getOwner();
        OpBuilder builder(user);
        Value destination = fill.getDpsInits()[0];
        if (auto empty = destination.getDefiningOp<tensor::EmptyOp>())
          destination = builder.clone(*empty)->getResult(0);
        IRMapping mapping;
        mapping.map(fill.getDpsInits()[0], destination);
        init->set(builder.clone(*fill, mapping)->getResult(0));
        ++numSplit;
      }
      if (filled.use_empty()) {
        Value destination = fill.getDpsInits()[0];
        fill.erase();
        if (auto empty = destination.getDefiningOp<tensor::EmptyOp>();
            empty && empty->use_empty())
          empty.erase();
      }
    }
  }
};

} // namespace
