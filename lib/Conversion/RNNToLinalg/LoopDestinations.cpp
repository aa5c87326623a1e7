//===- LoopDestinations.cpp - States updated in their own buffers ---------===//
//
// A state computed by a linalg op from `tensor.empty` gets a fresh buffer
// every step once bufferized. Writing the new state into the loop-carried
// tensor instead lets bufferization update it in place (a stream-ordered
// allocation and free less per step on the GPU), and bufferization still
// copies wherever the old value is read after the write.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace rnn {
namespace lowering {

/// The DPS init of the linalg op producing `value` (seen through a
/// tensor.cast, and a tensor.collapse_shape, returned in `collapse`) when it
/// is an unread tensor.empty; null otherwise. A contraction accumulates onto
/// its init: when that init is a zero fill that only the contraction reads
/// (a matmul's result, such as the backward's dh_{t-1}), the fill's
/// tensor.empty is the one to replace; so is the empty init of a pointwise
/// generic whose result only the contraction accumulates onto. A head-wise
/// product's result is its contraction's, collapsed from [B, NH, K] to [B,
/// NH·K].
static OpOperand *replaceableEmptyInit(Value value,
                                       tensor::CollapseShapeOp &collapse) {
  if (auto cast = value.getDefiningOp<tensor::CastOp>())
    value = cast.getSource();
  if (auto collapsed = value.getDefiningOp<tensor::CollapseShapeOp>();
      collapsed && !collapse) {
    collapse = collapsed;
    value = collapsed.getSrc();
  }
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return nullptr;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(result.getOwner());
  if (!linalgOp)
    return nullptr;
  OpOperand *init = linalgOp.getDpsInitOperand(result.getResultNumber());
  if (auto fill = init->get().getDefiningOp<linalg::FillOp>();
      fill && !isa<linalg::FillOp>(linalgOp.getOperation()) &&
      init->get().hasOneUse())
    return replaceableEmptyInit(init->get(), collapse);
  // A contraction that accumulates onto what a pointwise generic computed
  // for it alone (the GRU backward's dh_{t-1}: dh ⊙ z, then + dgates x U):
  // that generic's tensor.empty is the one to replace, so that the state is
  // updated in place rather than in a fresh buffer every step.
  if (auto producer = init->get().getDefiningOp<linalg::GenericOp>();
      producer && linalg::isaContractionOpInterface(linalgOp) &&
      producer.getNumReductionLoops() == 0 && init->get().hasOneUse() &&
      !collapse)
    return replaceableEmptyInit(init->get(), collapse);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      linalgOp.payloadUsesValueFromOperand(init))
    return nullptr;
  return init;
}

void reuseLoopCarriedDestinations(Operation *root) {
  root->walk([](scf::ForOp loop) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [carried, next] :
         llvm::zip(loop.getRegionIterArgs(), yield.getResults())) {
      tensor::CollapseShapeOp collapse;
      OpOperand *init = replaceableEmptyInit(next, collapse);
      if (!init)
        continue;
      Type initType = init->get().getType();
      OpBuilder b(init->getOwner());
      Value destination = carried;
      if (collapse) {
        // The carried tensor seen with the contraction's dimensions.
        auto carriedType = dyn_cast<RankedTensorType>(carried.getType());
        if (!carriedType || carriedType != collapse.getResultType())
          continue;
        destination = tensor::ExpandShapeOp::create(
            b, loop.getLoc(), collapse.getSrcType(), carried,
            collapse.getReassociationIndices());
      }
      if (!tensor::CastOp::areCastCompatible(destination.getType(), initType))
        continue;
      if (destination.getType() != initType)
        destination =
            tensor::CastOp::create(b, loop.getLoc(), initType, destination);
      init->set(destination);
    }
  });
}

/// `generic` with one more output, initialised by `init`, that receives the
/// same value as its result `resultIndex`. Replaces `generic`.
static linalg::GenericOp duplicateResult(linalg::GenericOp generic,
                                         unsigned resultIndex, Value init) {
  OpBuilder b(generic);
  SmallVector<Value> inits(generic.getDpsInits());
  inits.push_back(init);
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  maps.push_back(maps[generic.getNumDpsInputs() + resultIndex]);
  SmallVector<Type> resultTypes(generic.getResultTypes());
  resultTypes.push_back(init.getType());
  auto widened = linalg::GenericOp::create(b, generic.getLoc(), resultTypes,
                                           generic.getDpsInputs(), inits, maps,
                                           generic.getIteratorTypesArray());
  widened->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
  Region &region = widened.getRegion();
  region.takeBody(generic.getRegion());
  Block &body = region.front();
  body.addArgument(cast<ShapedType>(init.getType()).getElementType(),
                   generic.getLoc());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallVector<Value> values(yield.getValues());
  values.push_back(values[resultIndex]);
  OpBuilder yb(yield);
  linalg::YieldOp::create(yb, yield.getLoc(), values);
  yield.erase();
  generic->replaceAllUsesWith(
      widened.getResults().take_front(generic.getNumResults()));
  generic.erase();
  return widened;
}

void writeSequenceRowsInPlace(Operation *root) {
  SmallVector<tensor::InsertSliceOp> inserts;
  root->walk([&](tensor::InsertSliceOp insert) {
    auto dest = dyn_cast<BlockArgument>(insert.getDest());
    if (dest && isa<scf::ForOp>(dest.getOwner()->getParentOp()))
      inserts.push_back(insert);
  });
  for (tensor::InsertSliceOp insert : inserts) {
    auto result = dyn_cast<OpResult>(insert.getSource());
    auto generic =
        result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
    if (!generic || result.hasOneUse() ||
        generic->getBlock() != insert->getBlock())
      continue;
    // Only a result that goes to a buffer of its own (a state, a fresh
    // tensor): a row already computed in place (an accumulated projection
    // row) is its own destination.
    Value init = generic.getDpsInitOperand(result.getResultNumber())->get();
    if (!isa<BlockArgument>(init) && !init.getDefiningOp<tensor::EmptyOp>())
      continue;
    // The row's position must exist where the generic runs; its sizes are
    // the leading unit dimensions and the result's own.
    auto ready = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return !def || def->getBlock() != generic->getBlock() ||
             def->isBeforeInBlock(generic);
    };
    int64_t leading =
        insert.getDestType().getRank() - insert.getSourceType().getRank();
    SmallVector<OpFoldResult> sizes = insert.getMixedSizes();
    bool unitLeading = llvm::all_of(
        ArrayRef(sizes).take_front(leading),
        [](OpFoldResult size) { return isConstantIntValue(size, 1); });
    if (!unitLeading || !llvm::all_of(insert.getOffsets(), ready) ||
        !llvm::all_of(insert.getStrides(), ready) ||
        init.getType() != insert.getSourceType())
      continue;
    OpBuilder b(generic);
    SmallVector<OpFoldResult> rowSizes(leading, b.getIndexAttr(1));
    llvm::append_range(rowSizes,
                       tensor::getMixedSizes(b, insert.getLoc(), init));
    Value row = tensor::ExtractSliceOp::create(
        b, insert.getLoc(), insert.getSourceType(), insert.getDest(),
        insert.getMixedOffsets(), rowSizes, insert.getMixedStrides());
    linalg::GenericOp widened =
        duplicateResult(generic, result.getResultNumber(), row);
    // The same slice as the row read, so bufferization sees the row written
    // back where it came from.
    OpBuilder ib(insert);
    auto rewritten = tensor::InsertSliceOp::create(
        ib, insert.getLoc(), widened.getResults().back(), insert.getDest(),
        insert.getMixedOffsets(), rowSizes, insert.getMixedStrides());
    insert.replaceAllUsesWith(rewritten.getResult());
    insert.erase();
  }
}

void markArgumentsReadOnly(Operation *root) {
  // The C ABI's inputs belong to the caller: a loop that starts from an
  // argument must not update it in place.
  root->walk([](func::FuncOp func) {
    if (func.isExternal())
      return;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (isa<TensorType>(func.getArgument(i).getType()))
        func.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(func.getContext(), false));
  });
}

} // namespace lowering
} // namespace rnn
