//===- RowReductionsToKernels.cpp - One warp per row of a reduction -------===//
//
// The generic kernel mapping gives every row of a reduction to one thread,
// which then walks the whole row alone: a layer norm over 4096 features at
// batch 64 keeps 64 threads busy for thousands of dependent, uncoalesced
// loads. Here a warp takes a row instead: its lanes read consecutive
// elements (coalesced), each keeps a partial result, and five butterfly
// shuffles combine the partials.
//
//===----------------------------------------------------------------------===//

#include "GuardedLaunch.h"
#include "RowReduction.h"
#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace rnn {
#define GEN_PASS_DEF_CONVERTROWREDUCTIONSTOKERNELS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// Whether `value` is a constant equal to `neutral`.
bool isConstant(Value value, TypedAttr neutral) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  return constant && constant.getValue() == neutral;
}

/// Whether `op` may write `buffer`: its own effects say so, or, for an op
/// that holds others (a guard, a kernel), one of those may; ops that say
/// nothing may.
bool mayWrite(Operation *op, Value buffer) {
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
    return effects.getEffectOnValue<MemoryEffects::Write>(buffer).has_value();
  if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
      !isa<gpu::LaunchOp>(op))
    return true;
  for (Region &region : op->getRegions())
    for (Operation &nested : region.getOps())
      if (mayWrite(&nested, buffer))
        return true;
  return false;
}

/// Whether `copy` copies a buffer that a linalg.fill earlier in the same
/// block filled with `neutral`, nothing writing it in between.
bool copiesNeutralFill(linalg::CopyOp copy, TypedAttr neutral) {
  Value source = copy.getDpsInputs()[0];
  for (Operation *op = copy->getPrevNode(); op; op = op->getPrevNode()) {
    auto fill = dyn_cast<linalg::FillOp>(op);
    if (fill && fill.getDpsInits()[0] == source)
      return isConstant(fill.getDpsInputs()[0], neutral);
    if (mayWrite(op, source))
      return false;
  }
  return false;
}

/// The op just before `reduction` that fills its output with the neutral
/// element (a linalg.fill, or a linalg.copy of a buffer some linalg.fill
/// filled with it), when nothing between touches memory: the kernel can
/// then store its result instead of folding it into that value.
Operation *neutralInitialiser(linalg::GenericOp reduction, Value output,
                              TypedAttr neutral) {
  for (Operation *op = reduction->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      return fill.getDpsInits()[0] == output &&
                     isConstant(fill.getDpsInputs()[0], neutral)
                 ? op
                 : nullptr;
    if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
      if (copy.getDpsInits()[0] != output)
        return nullptr;
      return copiesNeutralFill(copy, neutral) ? op : nullptr;
    }
    if (!isMemoryEffectFree(op))
      return nullptr;
  }
  return nullptr;
}

struct ConvertRowReductionsToKernelsPass
    : public rnn::impl::ConvertRowReductionsToKernelsBase<
          ConvertRowReductionsToKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Operation *>> reductions;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (Operation *combiner = rnn::matchRowReduction(op))
        reductions.push_back({op, combiner});
    });
    for (auto [op, combiner] : reductions)
      convert(op, combiner);
  }

  void convert(linalg::GenericOp op, Operation *combiner) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value input = op.getDpsInputs()[0], output = op.getDpsInits()[0];
    auto inputType = cast<MemRefType>(input.getType());
    int64_t rank = inputType.getRank();
    auto elementType = cast<FloatType>(inputType.getElementType());
    TypedAttr neutralAttr = rnn::neutralElement(combiner, elementType);
    // Our reductions start from the neutral element: then the result is
    // stored as it is, and the fill (or copy of a filled buffer) goes.
    Operation *initialiser = neutralInitialiser(op, output, neutralAttr);

    SmallVector<Value> rowSizes;
    Value rows = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t d = 0; d + 1 < rank; ++d) {
      rowSizes.push_back(memref::DimOp::create(b, loc, input, d));
      rows = arith::MulIOp::create(b, loc, rows, rowSizes.back());
    }
    Value length = memref::DimOp::create(b, loc, input, rank - 1);
    Value warp = arith::ConstantIndexOp::create(b, loc, rnn::kWarpSize);
    Value warpsPerBlock =
        arith::ConstantIndexOp::create(b, loc, blockSize / rnn::kWarpSize);
    Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
    Value grid = arith::CeilDivUIOp::create(b, loc, rows, warpsPerBlock);
    gpu::LaunchOp launch = rnn::createGuardedLaunch(b, loc, rows, grid, block);

    OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
    Value thread = launch.getThreadIds().x;
    Value lane = arith::RemUIOp::create(kb, loc, thread, warp);
    Value row = arith::AddIOp::create(
        kb, loc,
        arith::MulIOp::create(kb, loc, launch.getBlockIds().x, warpsPerBlock),
        arith::DivUIOp::create(kb, loc, thread, warp));
    // A whole warp takes the same side of this test, so the shuffles below
    // always run with all 32 lanes.
    Value inRange =
        arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, row, rows);
    auto inside = scf::IfOp::create(kb, loc, inRange, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());

    // Row-major delinearisation of the row index.
    SmallVector<Value> indices(rank - 1);
    Value rest = row;
    for (int64_t d = rank - 2; d >= 0; --d) {
      indices[d] =
          d == 0 ? rest
                 : Value(arith::RemUIOp::create(ib, loc, rest, rowSizes[d]));
      if (d > 0)
        rest = arith::DivUIOp::create(ib, loc, rest, rowSizes[d]);
    }

    // Each lane folds elements lane, lane + 32, ... of the row.
    Value neutral = arith::ConstantOp::create(ib, loc, neutralAttr);
    auto strided = scf::ForOp::create(
        ib, loc, lane, length, warp, ValueRange{neutral},
        [&](OpBuilder &lb, Location l, Value k, ValueRange acc) {
          SmallVector<Value> at(indices);
          at.push_back(k);
          Value element = memref::LoadOp::create(lb, l, input, at);
          scf::YieldOp::create(lb, l,
                               rnn::combine(lb, combiner, element, acc[0]));
        });
    Value partial =
        rnn::combineAcrossWarp(ib, loc, combiner, strided.getResult(0));

    // Lane 0 writes the row's result, folded into the output's initial
    // value unless that is the neutral element.
    Value first =
        arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::eq, lane,
                              arith::ConstantIndexOp::create(ib, loc, 0));
    auto writer = scf::IfOp::create(ib, loc, first, /*withElse=*/false);
    OpBuilder wb = OpBuilder::atBlockBegin(&writer.getThenRegion().front());
    SmallVector<Value> at(indices);
    at.push_back(arith::ConstantIndexOp::create(wb, loc, 0));
    Value result = partial;
    if (!initialiser)
      result = rnn::combine(wb, combiner, partial,
                            memref::LoadOp::create(wb, loc, output, at));
    memref::StoreOp::create(wb, loc, result, output, at);

    kb.setInsertionPointToEnd(&launch.getBody().front());
    gpu::TerminatorOp::create(kb, loc);
    op.erase();
    if (initialiser)
      initialiser->erase();
  }
};

} // namespace
