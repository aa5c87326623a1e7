//===- HoistLoopAllocations.cpp - One scratch buffer for all iterations ---===//
//
// A buffer allocated and freed in every iteration of a loop (the recurrent
// GEMM's result, a step's temporaries) costs a stream-ordered allocation
// and free per time step on the GPU, two graph nodes per step once
// captured. When its size does not change across iterations and it does
// not outlive the iteration, one buffer allocated before the loop serves
// every iteration. A size computed in the loop from values defined before
// it (the batch size, read off a sequence argument with memref.dim) moves
// before the loop with the buffer.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace rnn {
#define GEN_PASS_DEF_HOISTLOOPALLOCATIONS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// The dealloc of `alloc` when it is its buffer's only free and sits in the
/// same block (so the buffer dies in the iteration that made it).
memref::DeallocOp deallocInSameBlock(memref::AllocOp alloc) {
  memref::DeallocOp found;
  for (Operation *user : alloc->getUsers()) {
    auto dealloc = dyn_cast<memref::DeallocOp>(user);
    if (!dealloc)
      continue;
    if (found || dealloc->getBlock() != alloc->getBlock())
      return {};
    found = dealloc;
  }
  return found;
}

/// Whether the buffer, or a view of it, leaves the iteration through the
/// loop's yield.
bool escapesThroughYield(Value buffer, scf::ForOp loop) {
  Operation *yield = loop.getBody()->getTerminator();
  SmallVector<Value> worklist{buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      if (use.getOwner() == yield)
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner()))
        if (view.getViewSource() == value)
          worklist.push_back(view->getResult(0));
    }
  }
  return false;
}

/// Whether `value` is defined before `loop`, or is computed in its body by
/// side-effect-free ops from such values (collected into `toHoist`, operands
/// first).
bool invariantIn(Value value, scf::ForOp loop,
                 llvm::SetVector<Operation *> &toHoist, unsigned depth = 0) {
  if (loop.isDefinedOutsideOfLoop(value))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody() || depth > 4 ||
      def->getNumRegions() || !isMemoryEffectFree(def))
    return false;
  for (Value operand : def->getOperands())
    if (!invariantIn(operand, loop, toHoist, depth + 1))
      return false;
  toHoist.insert(def);
  return true;
}

struct HoistLoopAllocationsPass
    : public rnn::impl::HoistLoopAllocationsBase<HoistLoopAllocationsPass> {
  void runOnOperation() override {
    // Innermost loops first, so a buffer can climb through a nest.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk<WalkOrder::PostOrder>(
        [&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      SmallVector<memref::AllocOp> allocs(
          loop.getBody()->getOps<memref::AllocOp>());
      for (memref::AllocOp alloc : allocs) {
        memref::DeallocOp dealloc = deallocInSameBlock(alloc);
        llvm::SetVector<Operation *> sizeOps;
        if (!dealloc || alloc.getSymbolOperands().size() ||
            escapesThroughYield(alloc, loop) ||
            llvm::any_of(alloc.getDynamicSizes(), [&](Value size) {
              return !invariantIn(size, loop, sizeOps);
            }))
          continue;
        for (Operation *op : sizeOps)
          op->moveBefore(loop);
        alloc->moveBefore(loop);
        dealloc->moveAfter(loop);
      }
    }
  }
};

} // namespace
