//===- RoundedStores.cpp - Products stored rounded by the call ------------===//
//
// A product stored in f32 only to be rounded to its operands' 16-bit type is
// stored rounded by the GEMM call itself (the libraries accumulate in f32 and
// round once at the store, as the cast kernel did): no f32 buffer, no cast.
//
//===----------------------------------------------------------------------===//

#include "RoundedStores.h"
#include "GemmOperands.h"

#include "../BufferViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace rnn::gemm;

Value RoundedStore::prepareTarget(OpBuilder &builder, Location loc) {
  if (moveTarget) {
    moveTarget->moveBefore(builder.getInsertionBlock(),
                           builder.getInsertionPoint());
    moveTarget = memref::AllocOp();
  }
  if (!collapse)
    return target;
  auto productType = cast<MemRefType>(alloc.getType());
  auto type =
      MemRefType::get(productType.getShape(),
                      cast<MemRefType>(target.getType()).getElementType());
  return memref::ExpandShapeOp::create(
      builder, loc, type, target, collapse.getReassociationIndices(),
      memref::getMixedSizes(builder, loc, alloc.getResult()));
}

void RoundedStore::cloneRounding(OpBuilder &builder) {
  IRMapping mapping;
  if (collapse)
    builder.clone(*collapse, mapping);
  builder.clone(*rounding, mapping);
}

std::optional<RoundedStore>
rnn::gemm::findRoundedStore(linalg::GenericOp contraction,
                            linalg::FillOp fill) {
  Value c = contraction.getDpsInits()[0];
  RoundedStore store;
  store.alloc = c.getDefiningOp<memref::AllocOp>();
  if (!fill || !store.alloc ||
      !cast<MemRefType>(c.getType()).getElementType().isF32())
    return std::nullopt;
  for (Operation *user : c.getUsers()) {
    if (user == fill.getOperation() || user == contraction.getOperation())
      continue;
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (store.dealloc)
        return std::nullopt;
      store.dealloc = dealloc;
      continue;
    }
    if (store.rounding || store.collapse)
      return std::nullopt;
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(user)) {
      if (!collapse->hasOneUse())
        return std::nullopt;
      store.collapse = collapse;
      user = *collapse->getUsers().begin();
    }
    store.rounding = dyn_cast<linalg::GenericOp>(user);
    if (!store.rounding)
      return std::nullopt;
  }
  linalg::GenericOp castOp = store.rounding;
  Value read = store.collapse ? store.collapse.getResult() : c;
  if (!castOp || !store.dealloc ||
      castOp->getBlock() != contraction->getBlock() ||
      !contraction->isBeforeInBlock(castOp) ||
      !castOp.hasPureBufferSemantics() || castOp.getNumDpsInputs() != 1 ||
      castOp.getNumDpsInits() != 1 || castOp.getDpsInputs()[0] != read ||
      castOp.getNumReductionLoops() != 0 ||
      !llvm::all_of(castOp.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return std::nullopt;
  Block &body = castOp.getRegion().front();
  auto truncate = dyn_cast<arith::TruncFOp>(&body.front());
  if (!truncate || truncate.getIn() != body.getArgument(0) ||
      truncate->getNextNode() != body.getTerminator() ||
      body.getTerminator()->getOperand(0) != truncate.getResult())
    return std::nullopt;
  store.target = castOp.getDpsInits()[0];
  auto targetType = cast<MemRefType>(store.target.getType());
  // The runtimes store a product in its operands' 16-bit type only (f32
  // operands rounded to bf16 stay a GEMM and a cast).
  Type operandElement =
      cast<MemRefType>(contraction.getDpsInputs()[0].getType())
          .getElementType();
  if (targetType.getElementType() != operandElement ||
      !operandElement.isIntOrFloat() ||
      operandElement.getIntOrFloatBitWidth() != 16 ||
      !hasUnitInnerStride(targetType) ||
      targetType.getRank() != cast<MemRefType>(read.getType()).getRank() ||
      (store.collapse && !targetType.getLayout().isIdentity()))
    return std::nullopt;
  // The GEMM must not write what it reads (a state updated as the rounded
  // product of itself).
  Value targetRoot = rnn::rootBuffer(store.target);
  for (Value input : contraction.getDpsInputs())
    if (rnn::rootBuffer(input) == targetRoot)
      return std::nullopt;
  // The target must exist where the contraction is: an allocation placed
  // between the two (the usual order after bufferization) moves up when
  // its sizes are known there.
  if (Operation *def = store.target.getDefiningOp()) {
    DominanceInfo dominance(contraction->getParentOp());
    if (!dominance.properlyDominates(def, contraction)) {
      auto alloc = dyn_cast<memref::AllocOp>(def);
      if (!alloc || alloc->getBlock() != contraction->getBlock() ||
          !llvm::all_of(alloc->getOperands(), [&](Value size) {
            return dominance.properlyDominates(size, contraction);
          }))
        return std::nullopt;
      store.moveTarget = alloc;
    }
  }
  // Between the two, nothing may touch the target's buffer: the GEMM writes
  // it where the contraction was.
  for (Operation *op = contraction->getNextNode(); op != castOp.getOperation();
       op = op->getNextNode()) {
    WalkResult touched = op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (isa<MemRefType>(operand.getType()) &&
            rnn::rootBuffer(operand) == targetRoot)
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (touched.wasInterrupted())
      return std::nullopt;
  }
  return store;
}

void rnn::gemm::eraseRounding(RoundedStore &rounded) {
  rounded.rounding.erase();
  if (rounded.collapse)
    rounded.collapse.erase();
  if (rounded.alloc->hasOneUse()) { // Its deallocation alone.
    rounded.dealloc.erase();
    rounded.alloc.erase();
  }
}
