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

/// The row `row` of `sequence` ([T, ...] -> [...] of `rowType`).
static Value extractRow(OpBuilder &b, Location loc, Value sequence, Value row,
                        RankedTensorType rowType) {
  SmallVector<OpFoldResult> offsets{row, b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
  llvm::append_range(sizes, mixedSizes(b, loc, rowType, sequence, 1));
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, rowType, sequence, offsets,
                                        sizes, strides);
}

/// `row` written into row `position` of `sequence`.
static Value insertRow(OpBuilder &b, Location loc, Value row, Value sequence,
                       Value position) {
  auto rowType = cast<RankedTensorType>(row.getType());
  SmallVector<OpFoldResult> offsets{position, b.getIndexAttr(0),
                                    b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
  llvm::append_range(sizes, mixedSizes(b, loc, rowType, sequence, 1));
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, row, sequence, offsets, sizes,
                                       strides);
}

static RankedTensorType rowTypeOf(Type sequenceType) {
  auto type = cast<RankedTensorType>(sequenceType);
  return RankedTensorType::get(type.getShape().drop_front(),
                               type.getElementType());
}

/// Whether the cell's input `index` is the accumulator of a matmul (the
/// projected input row after rnn-accumulate-into-projection): its sequence
/// is then carried through the loop, so that each step's GEMM adds onto its
/// row in place instead of into a copy.
static bool isAccumulatedInput(CellOp cell, unsigned index) {
  return llvm::any_of(cell.getBodyBlock().getArgument(index).getUses(),
                      [](OpOperand &use) {
                        auto matmul = dyn_cast<MatmulOp>(use.getOwner());
                        return matmul && matmul.getAcc() == use.get();
                      });
}

/// The matmul of the inlined cell that accumulates onto `row` (directly or
/// through a cast).
static MatmulOp accumulatorUser(Value row) {
  for (Operation *user : row.getUsers()) {
    if (auto matmul = dyn_cast<MatmulOp>(user))
      if (matmul.getAcc() == row)
        return matmul;
    if (auto cast = dyn_cast<tensor::CastOp>(user))
      if (MatmulOp matmul = accumulatorUser(cast.getResult()))
        return matmul;
  }
  return MatmulOp();
}

LogicalResult lowerScan(ScanOp scan, CellOp cell) {
  OpBuilder b(scan);
  Location loc = scan.getLoc();
  Value first = scan.getInputs().front();
  Value steps = tensor::DimOp::create(b, loc, first, 0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  bool reverse = scan.getReverse();
  size_t numStates = scan.getInit().size();

  // Loop-carried values: the states, the projected input sequences that the
  // recurrent GEMM accumulates onto, then every output sequence. Outputs
  // start empty and every step writes its row (zeros for rows past their
  // length). A state that is also an output (h) is written twice by the
  // step's kernel, into its own tensor and into the row (see
  // writeSequenceRowsInPlace), so bufferization copies neither.
  SmallVector<Value> iterInit(scan.getInit().begin(), scan.getInit().end());
  SmallVector<unsigned> accumulated;
  for (auto [index, sequence] : llvm::enumerate(scan.getInputs()))
    if (isAccumulatedInput(cell, index)) {
      accumulated.push_back(index);
      iterInit.push_back(sequence);
    }
  size_t numCarried = iterInit.size();
  // An output that is an input row, yielded as the step read it (a training
  // forward saving the hoisted projection of the input), is the input
  // sequence itself: no loop-carried sequence, no copy a step. Not with
  // lengths (rows past their length are zeros) nor for an input that a
  // GEMM accumulates onto (its rows change in the loop).
  SmallVector<int64_t> passedThrough;
  auto yieldOp = cast<YieldOp>(cell.getBodyBlock().getTerminator());
  for (auto [k, result] : llvm::enumerate(scan.getOutputs())) {
    int64_t input = -1;
    auto arg = dyn_cast<BlockArgument>(yieldOp.getOutputs()[k]);
    if (arg && !scan.getLengths() &&
        arg.getArgNumber() < scan.getInputs().size() &&
        !llvm::is_contained(accumulated, arg.getArgNumber()))
      input = arg.getArgNumber();
    passedThrough.push_back(input);
    if (input < 0)
      iterInit.push_back(emptyLike(
          b, loc, cast<RankedTensorType>(result.getType()), scan.getInputs()));
  }

  auto loop = scf::ForOp::create(
      b, loc, zero, steps, one, iterInit,
      [&](OpBuilder &lb, Location l, Value i, ValueRange iterArgs) {
        Value t = i;
        if (reverse) {
          Value last = arith::SubIOp::create(lb, l, steps, one);
          t = arith::SubIOp::create(lb, l, last, i);
        }
        ValueRange states = iterArgs.take_front(numStates);
        ValueRange sequences = iterArgs.drop_front(numCarried);

        SmallVector<Value> arguments;
        for (auto [index, input] : llvm::enumerate(scan.getInputs())) {
          Value sequence = input;
          auto carried = llvm::find(accumulated, index);
          if (carried != accumulated.end())
            sequence = iterArgs[numStates + (carried - accumulated.begin())];
          arguments.push_back(
              extractRow(lb, l, sequence, t, rowTypeOf(sequence.getType())));
        }
        llvm::append_range(arguments, states);
        llvm::append_range(arguments, scan.getParams());
        auto [outputs, newStates] = inlineCell(lb, l, cell, arguments);

        SmallVector<Value> yielded;
        for (auto [old, state] : llvm::zip(states, newStates)) {
          Value next = castTo(lb, l, state, old.getType());
          if (Value lengths = scan.getLengths())
            next = selectRows(lb, l, t, lengths, next, old,
                              cast<RankedTensorType>(old.getType()));
          yielded.push_back(next);
        }
        // The accumulated rows go back where they came from.
        for (auto [position, index] : llvm::enumerate(accumulated)) {
          Value sequence = iterArgs[numStates + position];
          MatmulOp matmul = accumulatorUser(arguments[index]);
          assert(matmul && "the inlined cell accumulates onto the row");
          RankedTensorType rowType = rowTypeOf(sequence.getType());
          yielded.push_back(insertRow(
              lb, l, castTo(lb, l, matmul.getResult(), rowType), sequence, t));
        }
        auto nextSequence = sequences.begin();
        for (auto [output, input] : llvm::zip(outputs, passedThrough)) {
          if (input >= 0)
            continue;
          Value sequence = *nextSequence++;
          RankedTensorType rowType = rowTypeOf(sequence.getType());
          Value row = castTo(lb, l, output, rowType);
          if (Value lengths = scan.getLengths())
            row = selectRows(lb, l, t, lengths, row, Value(), rowType);
          yielded.push_back(insertRow(lb, l, row, sequence, t));
        }
        scf::YieldOp::create(lb, l, yielded);
      });

  // Results: the output sequences, then the final states.
  b.setInsertionPointAfter(loop);
  SmallVector<Value> replacements;
  auto carriedOutput = loop.getResults().begin() + numCarried;
  for (auto [result, input] : llvm::zip(scan.getOutputs(), passedThrough))
    replacements.push_back(
        input >= 0 ? castTo(b, loc, scan.getInputs()[input], result.getType())
                   : *carriedOutput++);
  for (auto [state, result] : llvm::enumerate(scan.getFinalStates()))
    replacements.push_back(
        castTo(b, loc, loop.getResult(state), result.getType()));
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
