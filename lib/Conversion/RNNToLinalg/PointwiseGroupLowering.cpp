//===- PointwiseGroupLowering.cpp - rnn.pointwise to linalg.generic -------===//
//
// A group without row reductions is one parallel linalg.generic over its
// iteration space. A row reduction needs its whole row before anything that
// reads it: the body is cut into phases (phase p holds the ops that sit
// behind p reductions), each phase is one generic, and each reduction is a
// reducing generic between two phases. Values that cross phases travel as
// tensors; constants are re-created wherever they are used.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace rnn {
namespace lowering {

namespace {
constexpr int64_t kAnywhere = -1; // constants: re-created in any phase
} // namespace

SmallVector<Value> lowerPointwiseGroup(OpBuilder &b, PointwiseOp group) {
  Location loc = group.getLoc();
  MLIRContext *context = b.getContext();
  RankedTensorType iteration = group.getIterationType();
  int64_t rank = iteration.getRank();
  int64_t width = iteration.getShape().back();
  Block &body = group.getBodyBlock();
  auto yield = cast<PointwiseYieldOp>(body.getTerminator());

  // The windows that the reads see.
  SmallVector<Value> windows;
  for (auto [operandIndex, offset] :
       llvm::zip(group.getReadOperands(), group.getReadOffsets())) {
    Value operand = group.getInputs()[operandIndex];
    auto type = cast<RankedTensorType>(operand.getType());
    // Whole operands are read directly: a full-size slice would hide from
    // bufferization that the group reads a state where it writes it.
    if (type.getRank() == 0 || type.getShape().back() == 1 ||
        (offset == 0 && type.getShape().back() == width)) {
      windows.push_back(operand);
      continue;
    }
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = width;
    auto windowType = RankedTensorType::get(shape, type.getElementType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)),
        strides(type.getRank(), b.getIndexAttr(1));
    offsets.back() = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes = mixedSizes(b, loc, windowType, operand);
    windows.push_back(tensor::ExtractSliceOp::create(
        b, loc, windowType, operand, offsets, sizes, strides));
  }

  // Phases: a value's phase is the number of reductions behind it.
  DenseMap<Value, int64_t> phase;
  for (BlockArgument arg : body.getArguments())
    phase[arg] = 0;
  int64_t lastPhase = 0;
  for (Operation &op : body.without_terminator()) {
    int64_t p = op.getNumOperands() == 0 ? kAnywhere : 0;
    for (Value operand : op.getOperands())
      p = std::max(p, phase.lookup(operand));
    if (isa<RowSumOp, RowMaxOp>(op))
      ++p;
    for (Value result : op.getResults())
      phase[result] = p;
    lastPhase = std::max(lastPhase, p);
  }

  // Values a phase must hand on: read by a later phase, reduced, or yielded.
  llvm::MapVector<Value, Value> materialised; // value -> tensor
  DenseMap<Value, Value> reductions;          // row op result -> [.., 1]
  auto needsTensor = [&](Value v) {
    if (phase.lookup(v) == kAnywhere)
      return false;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == yield || isa<RowSumOp, RowMaxOp>(user))
        return true;
      if (user->getNumResults() &&
          phase.lookup(user->getResult(0)) > phase.lookup(v))
        return true;
    }
    return false;
  };
  SmallVector<Value> iterationSources(windows);

  for (int64_t p = 0; p <= lastPhase; ++p) {
    // The values this phase computes and must hand on.
    SmallVector<Value> outputs;
    for (BlockArgument arg : body.getArguments())
      if (p == 0 && needsTensor(arg))
        outputs.push_back(arg);
    for (Operation &op : body.without_terminator())
      for (Value result : op.getResults())
        if (phase.lookup(result) == p && needsTensor(result))
          outputs.push_back(result);

    // Inputs: the windows, then tensors of earlier phases and reductions.
    SmallVector<Value> inputs(windows);
    SmallVector<Value> inputValues; // the body value each extra input carries
    for (auto &[value, tensor] : materialised) {
      inputs.push_back(tensor);
      inputValues.push_back(value);
    }
    for (auto &[value, tensor] : reductions)
      if (phase.lookup(value) <= p) {
        inputs.push_back(tensor);
        inputValues.push_back(value);
      }

    SmallVector<Value> inits;
    SmallVector<Type> resultTypes;
    for (Value v : outputs) {
      auto type = RankedTensorType::get(iteration.getShape(), v.getType());
      inits.push_back(emptyLike(b, loc, type, iterationSources));
      resultTypes.push_back(type);
    }
    if (outputs.empty())
      continue;
    SmallVector<AffineMap> maps;
    for (Value input : inputs)
      maps.push_back(broadcastMap(
          context, cast<RankedTensorType>(input.getType()), iteration));
    for (size_t i = 0; i < outputs.size(); ++i)
      maps.push_back(b.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        b, loc, resultTypes, inputs, inits, maps, iterators,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          IRMapping mapping;
          for (auto [arg, scalar] :
               llvm::zip(body.getArguments(), args.take_front(windows.size())))
            mapping.map(arg, scalar);
          for (auto [value, scalar] : llvm::zip(
                   inputValues, args.slice(windows.size(), inputValues.size())))
            mapping.map(value, scalar);
          for (Operation &op : body.without_terminator()) {
            if (op.getNumResults() == 0)
              continue;
            int64_t opPhase = phase.lookup(op.getResult(0));
            if (isa<RowSumOp, RowMaxOp>(op))
              continue; // Its value arrives as an input.
            if (opPhase == p ||
                (opPhase == kAnywhere && !mapping.contains(op.getResult(0))))
              nb.clone(op, mapping);
          }
          SmallVector<Value> yielded;
          for (Value v : outputs)
            yielded.push_back(mapping.lookup(v));
          linalg::YieldOp::create(nb, l, yielded);
        });
    for (auto [value, tensor] : llvm::zip(outputs, generic.getResults()))
      materialised[value] = tensor;

    // The reductions whose operands this phase produced.
    for (Operation &op : body.without_terminator()) {
      if (!isa<RowSumOp, RowMaxOp>(op) || phase.lookup(op.getOperand(0)) != p)
        continue;
      reductions[op.getResult(0)] = reduceRows(
          b, loc, materialised.lookup(op.getOperand(0)), isa<RowMaxOp>(op));
    }
  }

  // Every yielded value is materialised (by its own phase, or as a
  // reduction); constants are filled.
  SmallVector<Value> results;
  for (auto [value, result] :
       llvm::zip(yield.getValues(), group.getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    if (Value t = materialised.lookup(value)) {
      results.push_back(t);
    } else if (Value r = reductions.lookup(value)) {
      results.push_back(
          elementwise(b, loc, type, r, [](OpBuilder &, Location, ValueRange a) {
            return a[0];
          }));
    } else {
      // A constant: clone its definition into a fill.
      Operation *def = value.getDefiningOp();
      OpBuilder::InsertionGuard guard(b);
      Value scalar = b.clone(*def)->getResult(0);
      Value init = emptyLike(b, loc, type, iterationSources);
      results.push_back(
          linalg::FillOp::create(b, loc, scalar, init).getResult(0));
    }
  }
  return results;
}

} // namespace lowering
} // namespace rnn
