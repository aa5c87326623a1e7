//===- ScanLowering.cpp - rnn.scan and rnn.step around an inlined cell ----===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace rnn {
namespace lowering {

/// Casts `value` to `type` when they differ only in static knowledge (a
/// cell with a dynamic batch applied to a static one, and back).
static Value castTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

/// Clones the cell's body with its arguments bound to `arguments` (cast to
/// the cell's types); returns the yielded outputs and new states.
static std::pair<SmallVector<Value>, SmallVector<Value>>
inlineCell(OpBuilder &b, Location loc, CellOp cell, ValueRange arguments) {
  IRMapping mapping;
  for (auto [arg, value] :
       llvm::zip(cell.getBodyBlock().getArguments(), arguments))
    mapping.map(arg, castTo(b, loc, value, arg.getType()));
  for (Operation &op : cell.getBodyBlock().without_terminator())
    b.clone(op, mapping);
  YieldOp yield = cell.getYield();
  SmallVector<Value> outputs, states;
  for (Value v : yield.getOutputs())
    outputs.push_back(mapping.lookup(v));
  for (Value v : yield.getStates())
    states.push_back(mapping.lookup(v));
  return {outputs, states};
}

/// Per-row choice between `ifValid` and `otherwise` ([B, N] each, or a zero
/// scalar for `otherwise` when null): row b takes `ifValid` when
/// `position < lengths[b]`.
static Value selectRows(OpBuilder &b, Location loc, Value position,
                        Value lengths, Value ifValid, Value otherwise,
                        RankedTensorType type) {
  MLIRContext *context = b.getContext();
  auto lengthsType = cast<RankedTensorType>(lengths.getType());
  SmallVector<Value> inputs{lengths, ifValid};
  if (otherwise)
    inputs.push_back(otherwise);
  Value init = emptyLike(b, loc, type, ValueRange{ifValid});
  SmallVector<AffineMap> maps{
      AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context),
      b.getMultiDimIdentityMap(2)};
  if (otherwise)
    maps.push_back(broadcastMap(
        context, cast<RankedTensorType>(otherwise.getType()), type));
  maps.push_back(b.getMultiDimIdentityMap(2));
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value length = args[0];
        Value t = arith::IndexCastOp::create(
            nb, l, lengthsType.getElementType(), position);
        Value valid =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, t, length);
        Value other =
            otherwise
                ? args[2]
                : Value(arith::ConstantOp::create(
                      nb, l, nb.getFloatAttr(type.getElementType(), 0.0)));
        Value chosen = arith::SelectOp::create(nb, l, valid, args[1], other);
        linalg::YieldOp::create(nb, l, chosen);
      });
  return generic.getResult(0);
}

LogicalResult lowerScan(ScanOp scan, CellOp cell) {
  OpBuilder b(scan);
  Location loc = scan.getLoc();
  Value first = scan.getInputs().front();
  Value steps = tensor::DimOp::create(b, loc, first, 0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);

  // Output sequences start empty; every step writes its slice (zeros for
  // rows past their length).
  SmallVector<Value> iterInit(scan.getInit().begin(), scan.getInit().end());
  for (Value output : scan.getOutputs())
    iterInit.push_back(emptyLike(
        b, loc, cast<RankedTensorType>(output.getType()), scan.getInputs()));
  size_t numStates = scan.getInit().size();

  auto loop = scf::ForOp::create(
      b, loc, zero, steps, one, iterInit,
      [&](OpBuilder &lb, Location l, Value i, ValueRange iterArgs) {
        Value t = i;
        if (scan.getReverse()) {
          Value last = arith::SubIOp::create(lb, l, steps, one);
          t = arith::SubIOp::create(lb, l, last, i);
        }
        SmallVector<Value> arguments;
        for (Value sequence : scan.getInputs()) {
          auto type = cast<RankedTensorType>(sequence.getType());
          auto rowType = RankedTensorType::get(type.getShape().drop_front(),
                                               type.getElementType());
          SmallVector<OpFoldResult> offsets{t, lb.getIndexAttr(0),
                                            lb.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes{lb.getIndexAttr(1)};
          llvm::append_range(sizes, mixedSizes(lb, l, rowType, sequence, 1));
          SmallVector<OpFoldResult> strides(3, lb.getIndexAttr(1));
          arguments.push_back(tensor::ExtractSliceOp::create(
              lb, l, rowType, sequence, offsets, sizes, strides));
        }
        ValueRange states = iterArgs.take_front(numStates);
        llvm::append_range(arguments, states);
        llvm::append_range(arguments, scan.getParams());
        auto [outputs, newStates] = inlineCell(lb, l, cell, arguments);

        SmallVector<Value> yielded;
        for (auto [state, newState] : llvm::zip(states, newStates)) {
          Value next = castTo(lb, l, newState, state.getType());
          if (Value lengths = scan.getLengths())
            next = selectRows(lb, l, t, lengths, next, state,
                              cast<RankedTensorType>(state.getType()));
          yielded.push_back(next);
        }
        for (auto [sequence, output] :
             llvm::zip(iterArgs.drop_front(numStates), outputs)) {
          auto seqType = cast<RankedTensorType>(sequence.getType());
          auto rowType = RankedTensorType::get(seqType.getShape().drop_front(),
                                               seqType.getElementType());
          Value row = castTo(lb, l, output, rowType);
          if (Value lengths = scan.getLengths())
            row = selectRows(lb, l, t, lengths, row, Value(), rowType);
          SmallVector<OpFoldResult> offsets{t, lb.getIndexAttr(0),
                                            lb.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes{lb.getIndexAttr(1)};
          llvm::append_range(sizes, mixedSizes(lb, l, rowType, sequence, 1));
          SmallVector<OpFoldResult> strides(3, lb.getIndexAttr(1));
          yielded.push_back(tensor::InsertSliceOp::create(
              lb, l, row, sequence, offsets, sizes, strides));
        }
        scf::YieldOp::create(lb, l, yielded);
      });

  SmallVector<Value> replacements;
  for (Value v : loop.getResults().drop_front(numStates))
    replacements.push_back(v);
  for (Value v : loop.getResults().take_front(numStates))
    replacements.push_back(v);
  scan.replaceAllUsesWith(replacements);
  scan.erase();
  return success();
}

LogicalResult lowerStep(StepOp step, CellOp cell) {
  OpBuilder b(step);
  Location loc = step.getLoc();
  SmallVector<Value> arguments(step.getInputs().begin(),
                               step.getInputs().end());
  llvm::append_range(arguments, step.getStates());
  llvm::append_range(arguments, step.getParams());
  auto [outputs, newStates] = inlineCell(b, loc, cell, arguments);
  SmallVector<Value> replacements;
  for (auto [value, result] : llvm::zip(outputs, step.getOutputs()))
    replacements.push_back(castTo(b, loc, value, result.getType()));
  for (auto [value, result] : llvm::zip(newStates, step.getNewStates()))
    replacements.push_back(castTo(b, loc, value, result.getType()));
  step.replaceAllUsesWith(replacements);
  step.erase();
  return success();
}

} // namespace lowering
} // namespace rnn
