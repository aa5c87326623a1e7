//===- PointwiseGroupOp.cpp - rnn.pointwise, the fused group --------------===//

#include "rnn/Dialect/RNN/IR/Broadcast.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace rnn;

void PointwiseOp::build(OpBuilder &builder, OperationState &state,
                        TypeRange resultTypes, ValueRange inputs,
                        ArrayRef<int64_t> readOperands,
                        ArrayRef<int64_t> readOffsets,
                        ArrayRef<int64_t> resultPieces) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  state.addAttribute(getReadOperandsAttrName(state.name),
                     builder.getDenseI64ArrayAttr(readOperands));
  state.addAttribute(getReadOffsetsAttrName(state.name),
                     builder.getDenseI64ArrayAttr(readOffsets));
  // One piece per result is the default; the attribute only appears on
  // groups that write wide results, so everything else prints as before.
  if (llvm::any_of(resultPieces, [](int64_t k) { return k != 1; }))
    state.addAttribute(getResultPiecesAttrName(state.name),
                       builder.getDenseI64ArrayAttr(resultPieces));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (int64_t operand : readOperands)
    block->addArgument(
        cast<RankedTensorType>(inputs[operand].getType()).getElementType(),
        state.location);
}

int64_t PointwiseOp::getNumPieces(unsigned result) {
  std::optional<ArrayRef<int64_t>> pieces = getResultPieces();
  if (!pieces || result >= pieces->size())
    return 1;
  return (*pieces)[result];
}

unsigned PointwiseOp::getFirstYieldIndex(unsigned result) {
  unsigned index = 0;
  for (unsigned r = 0; r < result; ++r)
    index += getNumPieces(r);
  return index;
}

unsigned PointwiseOp::getNumYieldedValues() {
  return getFirstYieldIndex(getNumResults());
}

RankedTensorType PointwiseOp::getIterationType() {
  auto type = cast<RankedTensorType>(getResult(0).getType());
  int64_t pieces = getNumPieces(0);
  // Also called on ops that do not verify (from the verifier itself): a
  // shape that cannot be cut into the pieces is returned as it is.
  if (pieces <= 1 || type.getRank() == 0 ||
      ShapedType::isDynamic(type.getShape().back()) ||
      type.getShape().back() % pieces != 0)
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape.back() /= pieces;
  return RankedTensorType::get(shape, type.getElementType());
}

// Custom form:
//   rnn.pointwise(%a[0], %a[32], %c) : A, C -> R0 pieces 4, R1
//       attributes {..} { body }
// Each distinct operand appears once in the type list, in order of its first
// read. `pieces k` follows a result of k > 1 pieces (`result_pieces`).
ParseResult PointwiseOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  llvm::DenseMap<std::pair<StringRef, unsigned>, int64_t> operandIndex;
  SmallVector<int64_t> readOperands, readOffsets;
  auto parseRead = [&]() -> ParseResult {
    OpAsmParser::UnresolvedOperand operand;
    if (parser.parseOperand(operand))
      return failure();
    auto key = std::make_pair(operand.name, operand.number);
    auto [it, inserted] = operandIndex.try_emplace(key, operands.size());
    if (inserted)
      operands.push_back(operand);
    int64_t offset = 0;
    if (succeeded(parser.parseOptionalLSquare()) &&
        (parser.parseInteger(offset) || parser.parseRSquare()))
      return failure();
    readOperands.push_back(it->second);
    readOffsets.push_back(offset);
    return success();
  };
  SmallVector<Type> operandTypes, resultTypes;
  SmallVector<int64_t> resultPieces;
  auto parseResult = [&]() -> ParseResult {
    Type type;
    int64_t pieces = 1;
    if (parser.parseType(type) ||
        (succeeded(parser.parseOptionalKeyword("pieces")) &&
         parser.parseInteger(pieces)))
      return failure();
    resultTypes.push_back(type);
    resultPieces.push_back(pieces);
    return success();
  };
  llvm::SMLoc typesLoc;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren,
                                     parseRead) ||
      parser.parseColon() || (typesLoc = parser.getCurrentLocation(), false) ||
      parser.parseTypeList(operandTypes) || parser.parseArrow() ||
      parser.parseCommaSeparatedList(parseResult) ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  if (parser.resolveOperands(operands, operandTypes, typesLoc, result.operands))
    return failure();
  result.addTypes(resultTypes);
  Builder &builder = parser.getBuilder();
  result.addAttribute(getReadOperandsAttrName(result.name),
                      builder.getDenseI64ArrayAttr(readOperands));
  result.addAttribute(getReadOffsetsAttrName(result.name),
                      builder.getDenseI64ArrayAttr(readOffsets));
  if (llvm::any_of(resultPieces, [](int64_t k) { return k != 1; }))
    result.addAttribute(getResultPiecesAttrName(result.name),
                        builder.getDenseI64ArrayAttr(resultPieces));
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, /*arguments=*/{}))
    return failure();
  PointwiseOp::ensureTerminator(*body, builder, result.location);
  return success();
}

void PointwiseOp::print(OpAsmPrinter &p) {
  p << '(';
  llvm::interleaveComma(llvm::zip(getReadOperands(), getReadOffsets()), p,
                        [&](auto read) {
                          p << getInputs()[std::get<0>(read)];
                          if (std::get<1>(read) != 0)
                            p << '[' << std::get<1>(read) << ']';
                        });
  p << ") : ";
  llvm::interleaveComma(getInputs().getTypes(), p);
  p << " -> ";
  // `pieces` is printed only where the attribute can hold it, one entry per
  // result; an attribute of another length stays in the dictionary, so that
  // the verifier can report it.
  std::optional<ArrayRef<int64_t>> pieces = getResultPieces();
  bool inlinePieces = pieces && pieces->size() == getNumResults();
  llvm::interleaveComma(llvm::enumerate(getResultTypes()), p, [&](auto it) {
    p << it.value();
    if (inlinePieces && (*pieces)[it.index()] != 1)
      p << " pieces " << (*pieces)[it.index()];
  });
  SmallVector<StringRef> elided = {getReadOperandsAttrName(),
                                   getReadOffsetsAttrName()};
  if (inlinePieces)
    elided.push_back(getResultPiecesAttrName());
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(), elided);
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/true,
                /*printBlockTerminators=*/true);
}

LogicalResult PointwiseOp::verify() {
  ArrayRef<int64_t> readOperands = getReadOperands();
  ArrayRef<int64_t> readOffsets = getReadOffsets();
  if (readOperands.size() != readOffsets.size())
    return emitOpError() << "has " << readOperands.size()
                         << " read operands but " << readOffsets.size()
                         << " read offsets";
  if (getNumResults() == 0)
    return emitOpError("must have at least one result");
  if (std::optional<ArrayRef<int64_t>> pieces = getResultPieces()) {
    if (pieces->size() != getNumResults())
      return emitOpError() << "has " << getNumResults()
                           << " results but result_pieces has "
                           << pieces->size() << " entries";
    for (auto [i, k] : llvm::enumerate(*pieces))
      if (k < 1)
        return emitOpError() << "result #" << i << " has " << k
                             << " pieces; a result has 1 or more";
  }
  auto first = cast<RankedTensorType>(getResult(0).getType());
  if (first.getRank() < 1)
    return emitOpError() << "result " << first << " must have rank 1 or more";
  int64_t firstPieces = getNumPieces(0);
  if (firstPieces != 1 && (ShapedType::isDynamic(first.getShape().back()) ||
                           first.getShape().back() % firstPieces != 0))
    return emitOpError() << "result #0 has type " << first
                         << ", whose last dimension is not " << firstPieces
                         << " pieces of one width";
  RankedTensorType iteration = getIterationType();
  for (auto [i, type] : llvm::enumerate(getResultTypes())) {
    int64_t k = getNumPieces(i);
    SmallVector<int64_t> expected(iteration.getShape());
    expected.back() *= k;
    if (cast<RankedTensorType>(type).getShape() == ArrayRef(expected))
      continue;
    if (k == 1 && firstPieces == 1)
      return emitOpError() << "result #" << i << " has type " << type
                           << " but result #0 has type " << iteration
                           << "; all results share one iteration space";
    return emitOpError() << "result #" << i << " has type " << type << " but "
                         << k << (k == 1 ? " piece" : " pieces")
                         << " of the iteration space " << iteration
                         << (k == 1 ? " makes " : " make ")
                         << RankedTensorType::get(
                                expected,
                                cast<RankedTensorType>(type).getElementType());
  }

  SmallVector<bool> used(getInputs().size(), false);
  int64_t width = iteration.getShape().back();
  for (auto [k, read] : llvm::enumerate(llvm::zip(readOperands, readOffsets))) {
    auto [operand, offset] = read;
    if (operand < 0 || operand >= static_cast<int64_t>(getInputs().size()))
      return emitOpError() << "read #" << k << " names operand #" << operand
                           << " of " << getInputs().size();
    used[operand] = true;
    auto type = cast<RankedTensorType>(getInputs()[operand].getType());
    SmallVector<int64_t> window(type.getShape());
    // An operand whose last axis is wider than 1 is read through a window of
    // the iteration width starting at the offset; otherwise it broadcasts.
    if (!window.empty() && window.back() != 1) {
      if (ShapedType::isDynamic(window.back()) || offset < 0 ||
          offset + width > window.back())
        return emitOpError() << "read #" << k << " at offset " << offset
                             << " of " << type << " does not fit " << width
                             << " columns of the iteration space " << iteration;
      window.back() = width;
    } else if (offset != 0) {
      return emitOpError() << "read #" << k << " of " << type
                           << " broadcasts along the last axis; its offset "
                           << offset << " must be 0";
    }
    if (!broadcastsTo(window, iteration.getShape()))
      return emitOpError() << "read #" << k << " of " << type
                           << " does not broadcast to the iteration space "
                           << iteration;
  }
  for (auto [i, isUsed] : llvm::enumerate(used))
    if (!isUsed)
      return emitOpError() << "operand #" << i << " is never read";
  return success();
}

LogicalResult PointwiseOp::verifyRegions() {
  Block &block = getBodyBlock();
  ArrayRef<int64_t> readOperands = getReadOperands();
  if (block.getNumArguments() != readOperands.size())
    return emitOpError() << "body has " << block.getNumArguments()
                         << " arguments but the op has " << readOperands.size()
                         << " reads";
  for (auto [k, arg] : llvm::enumerate(block.getArguments())) {
    Type expected =
        cast<RankedTensorType>(getInputs()[readOperands[k]].getType())
            .getElementType();
    if (arg.getType() != expected)
      return emitOpError() << "body argument #" << k << " has type "
                           << arg.getType() << " but read #" << k << " yields "
                           << expected;
  }
  for (Operation &op : block.without_terminator()) {
    bool scalarArithmetic =
        isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
        isa<RowSumOp, RowMaxOp>(op);
    if (!scalarArithmetic || op.getNumRegions() != 0 ||
        llvm::any_of(op.getResultTypes(),
                     [](Type t) { return !t.isIntOrIndexOrFloat(); }))
      return op.emitOpError()
             << "is not scalar arithmetic; the body of rnn.pointwise holds "
                "arith and math ops on scalars, rnn.row_sum and rnn.row_max";
  }
  return success();
}

LogicalResult PointwiseYieldOp::verify() {
  auto group = cast<PointwiseOp>((*this)->getParentOp());
  // The group's own verifier reports a result_pieces attribute that does
  // not name every result; counting its pieces would only add noise.
  std::optional<ArrayRef<int64_t>> pieces = group.getResultPieces();
  if (pieces && (pieces->size() != group.getNumResults() ||
                 llvm::any_of(*pieces, [](int64_t k) { return k < 1; })))
    return success();
  unsigned expectedCount = group.getNumYieldedValues();
  if (getValues().size() != expectedCount) {
    if (expectedCount == group.getNumResults())
      return emitOpError() << "yields " << getValues().size()
                           << " values but rnn.pointwise has "
                           << group.getNumResults() << " results";
    return emitOpError() << "yields " << getValues().size()
                         << " values but rnn.pointwise has "
                         << group.getNumResults() << " results of "
                         << expectedCount
                         << " pieces in all; a result of k pieces takes k "
                            "values";
  }
  unsigned index = 0;
  for (unsigned r = 0; r < group.getNumResults(); ++r) {
    Type expected =
        cast<RankedTensorType>(group.getResult(r).getType()).getElementType();
    int64_t k = group.getNumPieces(r);
    for (int64_t p = 0; p < k; ++p, ++index) {
      Type type = getValues()[index].getType();
      if (type == expected)
        continue;
      InFlightDiagnostic diag = emitOpError()
                                << "value #" << index << " has type " << type
                                << " but result #" << r;
      if (k != 1)
        diag << " (piece #" << p << " of " << k << ")";
      return diag << " has element type " << expected;
    }
  }
  return success();
}
