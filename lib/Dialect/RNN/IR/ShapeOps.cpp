//===- ShapeOps.cpp - Split, concat and row reductions --------------------===//

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace rnn;

/// Resolves an optional axis attribute: the last axis when absent, and a
/// negative axis counts from the end.
static int64_t resolveAxis(std::optional<int64_t> axis, int64_t rank) {
  if (!axis)
    return rank - 1;
  return *axis < 0 ? *axis + rank : *axis;
}

/// Checks that `piece` equals `whole` in every dimension but `axis`.
static bool agreeOffAxis(RankedTensorType piece, RankedTensorType whole,
                         int64_t axis) {
  if (piece.getRank() != whole.getRank() ||
      piece.getElementType() != whole.getElementType())
    return false;
  for (int64_t d = 0; d < whole.getRank(); ++d)
    if (d != axis && piece.getDimSize(d) != whole.getDimSize(d))
      return false;
  return true;
}

/// Checks the pieces of a split or concat against the whole along `axis`:
/// every other dimension equal, and static sizes along `axis` adding up.
static LogicalResult verifyPieces(Operation *op, StringRef pieceName,
                                  TypeRange pieces, RankedTensorType whole,
                                  std::optional<int64_t> axisAttr) {
  int64_t rank = whole.getRank();
  int64_t axis = resolveAxis(axisAttr, rank);
  if (rank == 0 || axis < 0 || axis >= rank)
    return op->emitOpError() << "axis " << axisAttr.value_or(-1)
                             << " is out of range for " << whole;
  if (pieces.empty())
    return op->emitOpError() << "needs at least one " << pieceName;
  if (whole.isDynamicDim(axis))
    return op->emitOpError()
           << "axis " << axis << " of " << whole << " must be static";
  int64_t total = 0;
  for (auto [i, t] : llvm::enumerate(pieces)) {
    auto piece = cast<RankedTensorType>(t);
    if (!agreeOffAxis(piece, whole, axis))
      return op->emitOpError()
             << pieceName << " #" << i << " has type " << piece
             << ", which differs from " << whole
             << " in element type, rank or a dimension other than axis "
             << axis;
    if (piece.isDynamicDim(axis))
      return op->emitOpError()
             << pieceName << " #" << i << " has type " << piece << "; axis "
             << axis << " must be static";
    total += piece.getDimSize(axis);
  }
  if (total != whole.getDimSize(axis))
    return op->emitOpError()
           << "the " << pieceName << "s add up to " << total << " along axis "
           << axis << " but " << whole << " has " << whole.getDimSize(axis);
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

int64_t SplitOp::getSplitAxis() {
  return resolveAxis(getAxis(), getInput().getType().getRank());
}

LogicalResult SplitOp::verify() {
  return verifyPieces(*this, "result", getResults().getTypes(),
                      getInput().getType(), getAxis());
}

LogicalResult SplitOp::fold(FoldAdaptor,
                            SmallVectorImpl<OpFoldResult> &results) {
  // A split into one piece is the input itself.
  if (getNumResults() == 1 && getResult(0).getType() == getInput().getType()) {
    results.push_back(getInput());
    return success();
  }
  // Splitting a concatenation back into its operands gives the operands.
  auto concat = getInput().getDefiningOp<ConcatOp>();
  if (!concat || concat.getConcatAxis() != getSplitAxis() ||
      concat.getInputs().getTypes() != getResultTypes())
    return failure();
  llvm::append_range(results, concat.getInputs());
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

int64_t ConcatOp::getConcatAxis() {
  return resolveAxis(getAxis(), getResult().getType().getRank());
}

LogicalResult ConcatOp::verify() {
  return verifyPieces(*this, "operand", getInputs().getTypes(),
                      getResult().getType(), getAxis());
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  // Concatenating all pieces of a split, in order, gives the split's input.
  auto split = getInputs()[0].getDefiningOp<SplitOp>();
  if (!split || split.getSplitAxis() != getConcatAxis() ||
      split.getInput().getType() != getType() ||
      !llvm::equal(split.getResults(), getInputs()))
    return {};
  return split.getInput();
}

//===----------------------------------------------------------------------===//
// Row reductions and layer normalisation
//===----------------------------------------------------------------------===//

static LogicalResult inferRowReduction(StringRef opName,
                                       std::optional<Location> location,
                                       ValueRange operands,
                                       SmallVectorImpl<Type> &results) {
  auto input = dyn_cast<RankedTensorType>(operands[0].getType());
  if (!input || input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOptionalError(location, "'", opName, "' op input ",
                             operands[0].getType(),
                             " must have a static last (feature) axis");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = 1;
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

#define RNN_DEFINE_REDUCTION_INFERENCE(OP)                                     \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> location, ValueRange operands,    \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    return inferRowReduction(getOperationName(), location, operands,           \
                             inferredReturnTypes);                             \
  }
RNN_DEFINE_REDUCTION_INFERENCE(ReduceSumOp)
RNN_DEFINE_REDUCTION_INFERENCE(ReduceMeanOp)
RNN_DEFINE_REDUCTION_INFERENCE(ReduceMaxOp)
#undef RNN_DEFINE_REDUCTION_INFERENCE

LogicalResult LayerNormOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOpError() << "input " << input
                         << " must have a static last (feature) axis";
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError() << "epsilon must be positive, got "
                         << getEpsilon().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

void TransposeOp::build(OpBuilder &builder, OperationState &state, Value input,
                        ArrayRef<int64_t> permutation) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  for (int64_t d : permutation)
    shape.push_back(type.getDimSize(d));
  build(builder, state, RankedTensorType::get(shape, type.getElementType()),
        input, permutation);
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getType();
  ArrayRef<int64_t> permutation = getPermutation();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return emitOpError() << "permutation has " << permutation.size()
                         << " entries but the input " << input << " has rank "
                         << rank;
  SmallVector<bool> seen(rank, false);
  for (int64_t d : permutation) {
    if (d < 0 || d >= rank || seen[d])
      return emitOpError() << "permutation [" << permutation
                           << "] is not a permutation of 0.." << rank - 1;
    seen[d] = true;
  }
  if (result.getRank() != rank ||
      result.getElementType() != input.getElementType())
    return emitOpError() << "result " << result
                         << " must have the rank and element type of the "
                            "input "
                         << input;
  for (int64_t i = 0; i < rank; ++i)
    if (result.getDimSize(i) != input.getDimSize(permutation[i]))
      return emitOpError() << "result " << result << " is not input " << input
                           << " permuted by [" << permutation << "]: dimension "
                           << i << " must be the input's " << permutation[i];
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  // The identity permutation.
  if (llvm::all_of(llvm::enumerate(getPermutation()),
                   [](auto entry) {
                     return entry.value() ==
                            static_cast<int64_t>(entry.index());
                   }) &&
      getInput().getType() == getType())
    return getInput();
  // A transpose undone by another.
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> first = inner.getPermutation(), second = getPermutation();
    bool identity = true;
    for (auto [i, d] : llvm::enumerate(second))
      identity &= first[d] == static_cast<int64_t>(i);
    if (identity && inner.getInput().getType() == getType())
      return inner.getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// The dimensions of `shape` other than static 1s.
static SmallVector<int64_t> nonUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> dims;
  for (int64_t d : shape)
    if (d != 1)
      dims.push_back(d);
  return dims;
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "result " << result
                         << " must have the element type of the input "
                         << input;
  if (nonUnitDims(input.getShape()) != nonUnitDims(result.getShape()))
    return emitOpError() << "cannot reshape " << input << " to " << result
                         << ": only dimensions of size 1 may be inserted or "
                            "removed (the other dimensions, in order, must "
                            "be the same; '?' matches only '?')";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A reshape of a reshape reshapes the original.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    if (inner.getInput().getType() == getType())
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}
