//===- ElideBufferCopies.cpp - Read the source instead of a copy of it ----===//
//
// Bufferization copies conservatively: a state read while the step writes
// the neighbouring row of the same sequence, a result converted to an
// identity layout and then copied into the caller's buffer. Where nothing
// writes the source while the copy is alive, the copy's readers can read
// the source itself and the copy (a kernel launch and a buffer on the GPU)
// goes away.
//
// The other way round, a fresh buffer computed only to be copied somewhere
// else is computed in the copy's target instead, where nothing else
// touches the target meanwhile. This is how every piece of a fused group's
// wide result lands in its columns: bufferization places one piece that a
// kernel computes in the wide buffer, but not several.
//
//===----------------------------------------------------------------------===//

#include "../BufferViews.h"
#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace rnn {
#define GEN_PASS_DEF_ELIDEBUFFERCOPIES
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// The buffers `value` may be a view of: its root buffer, or where that is
/// a loop's iteration argument or result, the roots of what enters and
/// what is yielded (a state that is a fresh buffer every step is never the
/// caller's).
void collectRoots(Value value, llvm::SetVector<Value> &roots,
                  DenseSet<Value> &visited) {
  Value root = rnn::rootBuffer(value);
  if (!visited.insert(root).second)
    return;
  scf::ForOp loop;
  Value init, yielded;
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (loop && arg.getOwner() == loop.getBody()) {
      if (OpOperand *operand = loop.getTiedLoopInit(arg)) {
        init = operand->get();
        yielded = loop.getTiedLoopYieldedValue(arg)->get();
      }
    }
  } else if (auto result = dyn_cast<OpResult>(root)) {
    loop = dyn_cast<scf::ForOp>(result.getOwner());
    if (loop) {
      init = loop.getInitArgs()[result.getResultNumber()];
      yielded = loop.getYieldedValues()[result.getResultNumber()];
    }
  }
  if (!init) {
    roots.insert(root);
    return;
  }
  collectRoots(init, roots, visited);
  collectRoots(yielded, roots, visited);
}

/// Whether `root` is an argument of the function around it.
bool isFunctionArgument(Value root) {
  auto argument = dyn_cast<BlockArgument>(root);
  return argument &&
         isa<FunctionOpInterface>(argument.getOwner()->getParentOp());
}

/// False only when `a` and `b` provably share no element: views of distinct
/// buffers at least one of which this function allocated (with
/// `distinctArguments`, or two different function arguments), or disjoint
/// subviews of one buffer.
bool mayOverlap(Value a, Value b, bool distinctArguments) {
  auto sliceA = a.getDefiningOp<memref::SubViewOp>();
  auto sliceB = b.getDefiningOp<memref::SubViewOp>();
  if (sliceA && sliceB && sliceA.getSource() == sliceB.getSource()) {
    FailureOr<bool> overlapping =
        ValueBoundsConstraintSet::areOverlappingSlices(
            a.getContext(), HyperrectangularSlice(sliceA),
            HyperrectangularSlice(sliceB));
    return failed(overlapping) || *overlapping;
  }
  llvm::SetVector<Value> rootsA, rootsB;
  DenseSet<Value> visitedA, visitedB;
  collectRoots(a, rootsA, visitedA);
  collectRoots(b, rootsB, visitedB);
  for (Value rootA : rootsA)
    for (Value rootB : rootsB) {
      if (rootA == rootB)
        return true;
      if (rootA.getDefiningOp<memref::AllocOp>() ||
          rootB.getDefiningOp<memref::AllocOp>())
        continue;
      if (!(distinctArguments && isFunctionArgument(rootA) &&
            isFunctionArgument(rootB)))
        return true;
    }
  return false;
}

/// Adds what `op` and the ops nested in it write to `written` (and, with
/// `reads`, what they read); fails when an op may touch memory it does not
/// name (a call, an unknown op).
LogicalResult collectWrites(Operation *op, SmallVectorImpl<Value> &written,
                            bool reads = false) {
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
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(
              instance.getEffect()) &&
          !(reads && isa<MemoryEffects::Read>(instance.getEffect())))
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
bool elide(memref::CopyOp copy, bool distinctArguments) {
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
    if (mayOverlap(target, source, distinctArguments))
      return false;
  copied.replaceAllUsesExcept(source, copy);
  copy->erase();
  if (alloc->use_empty())
    alloc->erase();
  return true;
}

/// Whether `use` of a buffer works on any layout of it (the buffer is
/// replaced by a strided view).
bool takesAnyLayout(OpOperand &use) {
  return isa<linalg::LinalgOp, memref::DimOp, memref::LoadOp, memref::StoreOp,
             memref::CopyOp>(use.getOwner());
}

/// Elides `copy` when its source is a fresh buffer (an allocation, or the
/// only view of one) that is dead after the copy: the ops that compute and
/// read it before the copy, in the same block, use the copy's target
/// instead, provided that nothing else reads or writes the target from the
/// first of them to the copy. The target's view ops move up to there.
bool forward(memref::CopyOp copy, bool distinctArguments) {
  Value source = copy.getSource();
  Value target = copy.getTarget();
  Operation *view = nullptr;
  auto alloc = source.getDefiningOp<memref::AllocOp>();
  if (!alloc) {
    view = source.getDefiningOp<memref::SubViewOp>();
    alloc = view ? cast<memref::SubViewOp>(view)
                       .getSource()
                       .getDefiningOp<memref::AllocOp>()
                 : nullptr;
    if (!alloc || !alloc->hasOneUse())
      return false;
  }
  auto sourceType = cast<MemRefType>(source.getType());
  auto targetType = cast<MemRefType>(target.getType());
  Block *block = copy->getBlock();
  if (alloc->getBlock() != block ||
      sourceType.getShape() != targetType.getShape() ||
      sourceType.getElementType() != targetType.getElementType() ||
      sourceType.getMemorySpace() != targetType.getMemorySpace())
    return false;

  // The source's uses: before the copy, in this block, none that depends on
  // its layout.
  Operation *first = nullptr;
  for (OpOperand &use : source.getUses()) {
    if (use.getOwner() == copy)
      continue;
    Operation *inBlock = block->findAncestorOpInBlock(*use.getOwner());
    if (!inBlock || !inBlock->isBeforeInBlock(copy) || !takesAnyLayout(use))
      return false;
    if (!first || inBlock->isBeforeInBlock(first))
      first = inBlock;
  }
  if (!first)
    return false;

  // The target must exist at `first`: the view ops in between that compute
  // it from values that do move there with it.
  DominanceInfo dominance(block->getParentOp());
  llvm::SetVector<Operation *> moved;
  std::function<bool(Value)> available = [&](Value value) {
    if (dominance.properlyDominates(value, first))
      return true;
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != block || def->getNumRegions() != 0 ||
        !isMemoryEffectFree(def) || !def->isBeforeInBlock(copy))
      return false;
    if (moved.contains(def))
      return true;
    if (!llvm::all_of(def->getOperands(), available))
      return false;
    moved.insert(def);
    return true;
  };
  if (!available(target))
    return false;

  // Nothing but the source's own uses may touch the target meanwhile.
  for (Operation *op = first; op != copy; op = op->getNextNode()) {
    if (moved.contains(op))
      continue;
    SmallVector<Value> touched;
    if (failed(collectWrites(op, touched, /*reads=*/true)))
      return false;
    for (Value value : touched)
      if (value != source && mayOverlap(value, target, distinctArguments))
        return false;
  }

  for (Operation *op : moved)
    op->moveBefore(first);
  source.replaceAllUsesExcept(target, copy);
  copy->erase();
  if (view)
    view->erase();
  alloc->erase();
  return true;
}

struct ElideBufferCopiesPass
    : public rnn::impl::ElideBufferCopiesBase<ElideBufferCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies)
      if (!elide(copy, distinctArguments))
        forward(copy, distinctArguments);
  }
};

} // namespace
