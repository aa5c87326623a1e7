//===- ComputeResultsInPlace.cpp - Results built in the caller's buffers --===//
//
// buffer-results-to-out-params makes a function write each result into a
// buffer the caller passes, but only replaces the function's own buffer by
// the caller's when its shape is static; otherwise the result is computed in
// a buffer of its own and copied at the end. A scan's output sequence has
// dynamic sizes (time and batch), so that copy is a second output-sized
// buffer and a pass over it per call. Under our C ABI the caller's buffer
// has the result's shape and overlaps no argument, so the function can
// compute the result there from the start. A result that is a reshape of
// such a buffer (the weight gradient computed as [1, 1, N, K] and
// collapsed to [N, K]) is computed in the caller's buffer seen through the
// inverse reshape.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace rnn {
#define GEN_PASS_DEF_COMPUTERESULTSINPLACE
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// Whether every use of `value` is in an op before `point` in its block
/// (`point`'s block is the one of `value`'s definition).
bool onlyUsedBefore(Value value, Operation *point) {
  Block *block = point->getBlock();
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    if (user == point)
      return true;
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    return ancestor && ancestor->isBeforeInBlock(point);
  });
}

struct ComputeResultsInPlacePass
    : rnn::impl::ComputeResultsInPlaceBase<ComputeResultsInPlacePass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      if (func.isExternal())
        return;
      Block &entry = func.getBody().front();
      SmallVector<memref::CopyOp> copies(entry.getOps<memref::CopyOp>());
      for (memref::CopyOp copy : copies) {
        auto result = dyn_cast<BlockArgument>(copy.getTarget());
        if (!result || result.getOwner() != &entry || !result.hasOneUse())
          continue;
        auto collapse =
            copy.getSource().getDefiningOp<memref::CollapseShapeOp>();
        auto alloc = (collapse ? collapse.getSrc() : copy.getSource())
                         .getDefiningOp<memref::AllocOp>();
        if (!alloc || alloc->getBlock() != &entry ||
            !onlyUsedBefore(alloc.getResult(), copy))
          continue;
        if (!collapse) {
          if (alloc.getType() != result.getType())
            continue;
          alloc.getResult().replaceAllUsesWith(result);
          copy.erase();
          alloc.erase();
          continue;
        }
        // The caller's buffer seen with the allocation's shape: static
        // shapes, identity layouts, the collapse used by the copy alone.
        MemRefType allocType = alloc.getType();
        if (!collapse->hasOneUse() || collapse.getType() != result.getType() ||
            !allocType.hasStaticShape() ||
            !allocType.getLayout().isIdentity() ||
            !cast<MemRefType>(result.getType()).getLayout().isIdentity())
          continue;
        OpBuilder b(alloc);
        Value view =
            memref::ExpandShapeOp::create(b, alloc.getLoc(), allocType, result,
                                          collapse.getReassociationIndices());
        alloc.getResult().replaceAllUsesWith(view);
        copy.erase();
        collapse.erase();
        alloc.erase();
      }
    });
  }
};

} // namespace
