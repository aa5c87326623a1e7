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
                        ArrayRef<int64_t> readOffsets) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  state.addAttribute(getReadOperandsAttrName(state.name),
                     builder.getDenseI64ArrayAttr(readOperands));
  state.addAttribute(getReadOffsetsAttrName(state.name),
                     builder.getDenseI64ArrayAttr(readOffsets));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (int64_t operand : readOperands)
    block->addArgument(
        cast<RankedTensorType>(inputs[operand].getType()).getElementType(),
        state.location);
}

RankedTensorType PointwiseOp::getIterationType() {
  return cast<RankedTensorType>(getResult(0).getType());
}

// Custom form:
//   rnn.pointwise(%a[0], %a[32], %c) : A, C -> R0, R1 attributes {..} { body }
// Each distinct operand appears once in the type list, in order of its first
// read.
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
  llvm::SMLoc typesLoc;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren,
                                     parseRead) ||
      parser.parseColon() || (typesLoc = parser.getCurrentLocation(), false) ||
      parser.parseTypeList(operandTypes) || parser.parseArrow() ||
      parser.parseTypeList(resultTypes) ||
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
  llvm::interleaveComma(getResultTypes(), p);
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getReadOperandsAttrName(), getReadOffsetsAttrName()});
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
  RankedTensorType iteration = getIterationType();
  if (iteration.getRank() < 1)
    return emitOpError() << "result " << iteration
                         << " must have rank 1 or more";
  for (auto [i, type] : llvm::enumerate(getResultTypes()))
    if (cast<RankedTensorType>(type).getShape() != iteration.getShape())
      return emitOpError() << "result #" << i << " has type " << type
                           << " but result #0 has type " << iteration
                           << "; all results share one iteration space";

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
  if (getValues().size() != group.getNumResults())
    return emitOpError() << "yields " << getValues().size()
                         << " values but rnn.pointwise has "
                         << group.getNumResults() << " results";
  for (auto [i, value] : llvm::enumerate(getValues())) {
    Type expected =
        cast<RankedTensorType>(group.getResult(i).getType()).getElementType();
    if (value.getType() != expected)
      return emitOpError() << "value #" << i << " has type " << value.getType()
                           << " but result #" << i << " has element type "
                           << expected;
  }
  return success();
}
