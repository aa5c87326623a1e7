//===- PointwiseGroupLowering.cpp - rnn.pointwise to linalg.generic -------===//
//
// A group without row reductions is one parallel linalg.generic over its
// iteration space. A row reduction needs its whole row before anything that
// reads it: the body is cut into phases (phase p holds the ops that sit
// behind p reductions), each phase is one generic, and each reduction is a
// reducing generic between two phases. Values that cross phases travel as
// tensors; constants are re-created wherever they are used.
//
// A result of k pieces starts as one tensor.empty k times as wide as the
// iteration space. The generic that computes piece p writes it into an
// extract_slice of columns [p*N, (p+1)*N) of that tensor (its init), and an
// insert_slice of the same columns puts it back. One-Shot Bufferize places
// one piece of each generic in the wide buffer that way (it cannot tell that
// the later inserts go into the same buffer); elide-buffer-copies then
// computes the others there too, so the concatenation that the group stands
// for costs no copy. A value yielded to several places (pieces of two wide
// results, or a piece and a result of its own) is written to each by the
// generic that computes it.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace rnn {
namespace lowering {

namespace {
constexpr int64_t kAnywhere = -1; // constants: re-created in any phase

/// An id for the row group that lowering `group` creates, unique in its
/// function (one more than the largest there so far), so that the output
/// does not depend on what else the process compiled.
int64_t nextRowGroupId(PointwiseOp group) {
  Operation *scope = group->getParentOfType<FunctionOpInterface>();
  if (!scope)
    scope = group->getParentOp();
  int64_t next = 0;
  scope->walk([&](Operation *op) {
    if (auto id = op->getAttrOfType<IntegerAttr>(kRowGroupAttr))
      next = std::max(next, id.getInt() + 1);
  });
  return next;
}

/// Columns [piece * width, (piece + 1) * width) of `wide`, with the
/// iteration space's shape `sliceType`.
Value pieceOf(OpBuilder &b, Location loc, Value wide, int64_t piece,
              int64_t width, RankedTensorType sliceType) {
  int64_t rank = sliceType.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1));
  offsets.back() = b.getIndexAttr(piece * width);
  return tensor::ExtractSliceOp::create(b, loc, sliceType, wide, offsets,
                                        mixedSizes(b, loc, sliceType, wide),
                                        strides);
}

/// `piece` written back into columns [index * width, ...) of `wide`.
Value insertPiece(OpBuilder &b, Location loc, Value piece, Value wide,
                  int64_t index, int64_t width) {
  auto type = cast<RankedTensorType>(piece.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1));
  offsets.back() = b.getIndexAttr(index * width);
  return tensor::InsertSliceOp::create(b, loc, piece, wide, offsets,
                                       mixedSizes(b, loc, type, wide), strides);
}
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

  // A block argument's window has the iteration space's shape, or is
  // broadcast into it.
  DenseMap<Value, Value> windowOf;
  for (auto [arg, window] : llvm::zip(body.getArguments(), windows))
    windowOf[arg] = window;
  auto spansIteration = [&](Value window) {
    auto type = cast<RankedTensorType>(window.getType());
    return type.getRank() == rank && type.getShape() == iteration.getShape();
  };

  // Values a phase must hand on: read by a later phase, reduced, or yielded.
  // Every phase reads the windows itself, so a block argument only needs a
  // tensor of its own when it is yielded, or reduced from a window that is
  // broadcast.
  llvm::MapVector<Value, Value> materialised; // value -> tensor
  // Insertion order, not pointer order: the generics' operand order (and so
  // the compiled code) must not depend on where the values live in memory.
  llvm::MapVector<Value, Value> reductions; // row op result -> [.., 1]
  auto needsTensor = [&](Value v) {
    if (phase.lookup(v) == kAnywhere)
      return false;
    Value window = windowOf.lookup(v);
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == yield)
        return true;
      if (isa<RowSumOp, RowMaxOp>(user)) {
        if (!window || !spansIteration(window))
          return true;
        continue;
      }
      if (!window && user->getNumResults() &&
          phase.lookup(user->getResult(0)) > phase.lookup(v))
        return true;
    }
    return false;
  };
  SmallVector<Value> iterationSources(windows);

  // The wide results' tensors, and for each yielded value the piece of a
  // wide result it is computed in (the first such piece it fills; any other
  // place it is yielded to gets a copy).
  SmallVector<Value> wide(group.getNumResults());
  DenseMap<Value, std::pair<unsigned, int64_t>> computedIn;
  for (unsigned r = 0; r < group.getNumResults(); ++r) {
    int64_t pieces = group.getNumPieces(r);
    if (pieces == 1)
      continue;
    wide[r] =
        emptyLike(b, loc, cast<RankedTensorType>(group.getResult(r).getType()),
                  iterationSources);
    unsigned first = group.getFirstYieldIndex(r);
    for (int64_t p = 0; p < pieces; ++p)
      computedIn.try_emplace(yield.getValues()[first + p], r, p);
  }
  // Every other place a value computed in a wide piece is yielded to (a
  // piece of another wide result, or a result of its own: the GRU's
  // backward hands two gate gradients to both the saved gradients and the
  // recurrent product's operand): the generic that computes the value
  // writes it there too, one more store, instead of a copy afterwards.
  using Place = std::pair<unsigned, int64_t>;
  llvm::MapVector<Value, SmallVector<Place>> otherPlaces;
  for (unsigned r = 0; r < group.getNumResults(); ++r) {
    unsigned first = group.getFirstYieldIndex(r);
    for (int64_t p = 0, e = group.getNumPieces(r); p < e; ++p) {
      Value value = yield.getValues()[first + p];
      auto place = computedIn.find(value);
      if (place != computedIn.end() && place->second != Place(r, p))
        otherPlaces[value].push_back(Place(r, p));
    }
  }
  DenseMap<std::tuple<Value, unsigned, int64_t>, Value> placed;
  // The ops of one group are marked so that a GPU lowering can find them
  // again after bufferization and run them as one kernel.
  IntegerAttr groupId;
  if (lastPhase > 0)
    groupId = b.getI64IntegerAttr(nextRowGroupId(group));
  auto mark = [&](Operation *op) {
    if (groupId)
      op->setAttr(kRowGroupAttr, groupId);
  };

  // A yielded block argument (a state the step saves as it found it, the
  // LSTM's c_{t-1}) is written by the last phase that reads it: the phase
  // that overwrites the state in place reads it there too, and a copy in an
  // earlier phase alone would be folded away, leaving the old value to be
  // saved after the state's buffer has taken the new one.
  auto lastReadingPhase = [&](BlockArgument arg) {
    int64_t last = 0;
    for (Operation *user : arg.getUsers()) {
      if (user == yield || !user->getNumResults())
        continue;
      int64_t p = phase.lookup(user->getResult(0));
      last = std::max(last, isa<RowSumOp, RowMaxOp>(user) ? p - 1 : p);
    }
    return last;
  };

  for (int64_t p = 0; p <= lastPhase; ++p) {
    // The values this phase computes and must hand on.
    SmallVector<Value> outputs;
    for (BlockArgument arg : body.getArguments())
      if (lastReadingPhase(arg) == p && needsTensor(arg))
        outputs.push_back(arg);
    for (Operation &op : body.without_terminator())
      for (Value result : op.getResults())
        if (phase.lookup(result) == p && needsTensor(result))
          outputs.push_back(result);

    // The values this phase's ops read (a yielded block argument reads
    // itself).
    llvm::SmallDenseSet<Value> reads(outputs.begin(), outputs.end());
    for (Operation &op : body.without_terminator())
      if (op.getNumResults() && !isa<RowSumOp, RowMaxOp>(op) &&
          phase.lookup(op.getResult(0)) == p)
        reads.insert(op.operand_begin(), op.operand_end());

    // Inputs: the windows it reads, then the tensors of earlier phases and
    // the reductions it reads.
    SmallVector<Value> inputs;
    SmallVector<Value> inputValues; // the body value each input carries
    for (auto [arg, window] : llvm::zip(body.getArguments(), windows))
      if (reads.contains(arg)) {
        inputs.push_back(window);
        inputValues.push_back(arg);
      }
    for (auto &[value, tensor] : materialised)
      if (reads.contains(value) && phase.lookup(value) < p &&
          !windowOf.contains(value)) {
        inputs.push_back(tensor);
        inputValues.push_back(value);
      }
    for (auto &[value, tensor] : reductions)
      if (reads.contains(value) && phase.lookup(value) <= p) {
        inputs.push_back(tensor);
        inputValues.push_back(value);
      }

    if (!outputs.empty()) {
      SmallVector<Value> inits;
      SmallVector<Type> resultTypes;
      for (Value v : outputs) {
        auto type = RankedTensorType::get(iteration.getShape(), v.getType());
        auto place = computedIn.find(v);
        inits.push_back(place == computedIn.end()
                            ? emptyLike(b, loc, type, iterationSources)
                            : pieceOf(b, loc, wide[place->second.first],
                                      place->second.second, width, type));
        resultTypes.push_back(type);
      }
      // Then the other places of this phase's values.
      SmallVector<std::pair<Value, Place>> extra;
      for (Value v : outputs)
        for (Place place : otherPlaces.lookup(v)) {
          auto type = RankedTensorType::get(iteration.getShape(), v.getType());
          inits.push_back(wide[place.first]
                              ? pieceOf(b, loc, wide[place.first], place.second,
                                        width, type)
                              : emptyLike(b, loc, type, iterationSources));
          resultTypes.push_back(type);
          extra.emplace_back(v, place);
        }
      SmallVector<AffineMap> maps;
      for (Value input : inputs)
        maps.push_back(broadcastMap(
            context, cast<RankedTensorType>(input.getType()), iteration));
      for (size_t i = 0; i < inits.size(); ++i)
        maps.push_back(b.getMultiDimIdentityMap(rank));
      SmallVector<utils::IteratorType> iterators(rank,
                                                 utils::IteratorType::parallel);
      auto generic = linalg::GenericOp::create(
          b, loc, resultTypes, inputs, inits, maps, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            IRMapping mapping;
            for (auto [value, scalar] :
                 llvm::zip(inputValues, args.take_front(inputValues.size())))
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
            for (auto &[v, place] : extra)
              yielded.push_back(mapping.lookup(v));
            linalg::YieldOp::create(nb, l, yielded);
          });
      mark(generic);
      for (auto [value, tensor] : llvm::zip(outputs, generic.getResults()))
        materialised[value] = tensor;
      for (auto [entry, tensor] :
           llvm::zip(extra, generic.getResults().drop_front(outputs.size())))
        placed[{entry.first, entry.second.first, entry.second.second}] = tensor;
    }

    // The reductions of this phase's values, straight from the window when
    // they reduce a block argument.
    for (Operation &op : body.without_terminator()) {
      if (!isa<RowSumOp, RowMaxOp>(op) || phase.lookup(op.getOperand(0)) != p)
        continue;
      Value reduced = materialised.lookup(op.getOperand(0));
      if (!reduced)
        reduced = windowOf.lookup(op.getOperand(0));
      Value rows = reduceRows(b, loc, reduced, isa<RowMaxOp>(op));
      mark(rows.getDefiningOp());
      reductions[op.getResult(0)] = rows;
    }
  }

  // Every yielded value is materialised (by its own phase, or as a
  // reduction); constants are filled.
  auto tensorOf = [&](Value value, RankedTensorType type) -> Value {
    if (Value t = materialised.lookup(value))
      return t;
    if (Value r = reductions.lookup(value))
      return elementwise(
          b, loc, type, r,
          [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    // A constant: clone its definition into a fill.
    Operation *def = value.getDefiningOp();
    OpBuilder::InsertionGuard guard(b);
    Value scalar = b.clone(*def)->getResult(0);
    Value init = emptyLike(b, loc, type, iterationSources);
    return linalg::FillOp::create(b, loc, scalar, init).getResult(0);
  };
  // A value at one of its other places: what its generic wrote there.
  auto tensorAt = [&](Value value, unsigned r, int64_t p,
                      RankedTensorType type) -> Value {
    if (Value t = placed.lookup({value, r, p}))
      return t;
    return tensorOf(value, type);
  };
  SmallVector<Value> results;
  for (auto [r, result] : llvm::enumerate(group.getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    unsigned first = group.getFirstYieldIndex(r);
    if (!wide[r]) {
      results.push_back(tensorAt(yield.getValues()[first], r, 0, type));
      continue;
    }
    // Each piece into its columns; a piece computed there already is
    // written back where it was computed, so bufferization copies nothing.
    Value tensor = wide[r];
    auto pieceType =
        RankedTensorType::get(iteration.getShape(), type.getElementType());
    for (int64_t p = 0, e = group.getNumPieces(r); p < e; ++p)
      tensor = insertPiece(
          b, loc, tensorAt(yield.getValues()[first + p], r, p, pieceType),
          tensor, p, width);
    results.push_back(tensor);
  }
  return results;
}

} // namespace lowering
} // namespace rnn
