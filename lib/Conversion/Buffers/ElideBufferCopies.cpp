//===- ElideBufferCopies.cpp - Read the source instead of a copy of it ----===//
//
// Bufferization copies conservatively: a state read while the step writes
// the neighbouring row of the same sequence, a result converted to an
// identity layout and then copied into the caller's buffer. Where nothing
// writes the source while the copy is alive, the copy's readers can read
// the source itself and the copy (a kernel launch and a buffer on the GPU)
// goes away.
//
//===----------------------------------------------------------------------===//

#include "../BufferViews.h"
#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace rnn {
#define GEN_PASS_DEF_ELIDEBUFFERCOPIES
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// False only when `a` and `b` provably share no element: views of distinct
/// buffers at least one of which this function allocated, or disjoint
/// subviews of one buffer.
bool mayOverlap(Value a, Value b) {
  Value rootA = rnn::rootBuffer(a), rootB = rnn::rootBuffer(b);
  if (rootA != rootB)
    return !rootA.getDefiningOp<memref::AllocOp>() &&
           !rootB.getDefiningOp<memref::AllocOp>();
  auto sliceA = a.getDefiningOp<memref::SubViewOp>();
  auto sliceB = b.getDefiningOp<memref::SubViewOp>();
  if (!sliceA || !sliceB || sliceA.getSource() != rootA ||
      sliceB.getSource() != rootB)
    return true;
  FailureOr<bool> overlapping = ValueBoundsConstraintSet::areOverlappingSlices(
      a.getContext(), HyperrectangularSlice(sliceA),
      HyperrectangularSlice(sliceB));
  return failed(overlapping) || *overlapping;
}

/// Adds what `op` and the ops nested in it write to `written`; fails when
/// an op may write memory it does not name (a call, an unknown op).
LogicalResult collectWrites(Operation *op, SmallVectorImpl<Value> &written) {
  WalkResult result = op->walk([&](Operation *nested) {
    // An op's own effects first (a linalg op names its outputs); only an op
    // without them defers to the ops it holds, which the walk visits.
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>()
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &instance : instances) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(instance.getEffect()))
        continue;
      Value value = instance.getValue();
      if (!value)
        return WalkResult::interrupt();
      written.push_back(value);
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Whether `use` only reads the buffer it names.
bool onlyReads(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(owner))
    return linalgOp.isDpsInput(&use);
  if (auto copy = dyn_cast<memref::CopyOp>(owner))
    return use.get() == copy.getSource() && use.get() != copy.getTarget();
  return isa<memref::LoadOp, memref::DimOp>(owner);
}

/// Elides `copy` when its target is a fresh buffer that is only read
/// afterwards, in the same block, and nothing writes the source until the
/// last read.
bool elide(memref::CopyOp copy) {
  Value copied = copy.getTarget();
  auto alloc = copied.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return false;
  Block *block = copy->getBlock();
  Operation *lastRead = copy;
  for (OpOperand &use : copied.getUses()) {
    Operation *owner = use.getOwner();
    if (owner == copy)
      continue;
    if (!onlyReads(use))
      return false;
    Operation *inBlock = block->findAncestorOpInBlock(*owner);
    if (!inBlock || !copy->isBeforeInBlock(inBlock))
      return false;
    if (lastRead->isBeforeInBlock(inBlock))
      lastRead = inBlock;
  }
  Value source = copy.getSource();
  SmallVector<Value> written;
  for (Operation *op = copy->getNextNode();; op = op->getNextNode()) {
    if (failed(collectWrites(op, written)))
      return false;
    if (op == lastRead)
      break;
  }
  for (Value target : written)
    if (mayOverlap(target, source))
      return false;
  copied.replaceAllUsesExcept(source, copy);
  copy->erase();
  if (alloc->use_empty())
    alloc->erase();
  return true;
}

struct ElideBufferCopiesPass
    : public rnn::impl::ElideBufferCopiesBase<ElideBufferCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies)
      elide(copy);
  }
};

} // namespace
