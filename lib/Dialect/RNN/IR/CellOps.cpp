//===- CellOps.cpp - rnn.cell, rnn.yield, rnn.scan and rnn.step -----------===//

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace rnn;

//===----------------------------------------------------------------------===//
// Helpers shared by the cell and its applications
//===----------------------------------------------------------------------===//

/// Whether `type` is a `[B, N]` row tensor with a static feature size N.
static bool isRowTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 2 && !tensor.isDynamicDim(1);
}

static std::string printDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

namespace {
/// Tracks one dimension (the batch or the sequence length) that every operand
/// and result of an op must agree on, and reports the first disagreement
/// naming both places.
class DimAgreement {
public:
  DimAgreement(Operation *op, StringRef dimName) : op(op), dimName(dimName) {}

  LogicalResult check(int64_t dim, const Twine &where) {
    if (!first) {
      first = dim;
      firstWhere = where.str();
      return success();
    }
    if (*first == dim)
      return success();
    return op->emitOpError()
           << dimName << " disagrees: " << firstWhere << " has "
           << printDim(*first) << " but " << where << " has " << printDim(dim);
  }

private:
  Operation *op;
  StringRef dimName;
  std::optional<int64_t> first;
  std::string firstWhere;
};
} // namespace

//===----------------------------------------------------------------------===//
// CellOp
//===----------------------------------------------------------------------===//

void CellOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   TypeRange inputs, TypeRange states, TypeRange params,
                   TypeRange outputs) {
  SmallVector<Type> argTypes;
  llvm::append_range(argTypes, inputs);
  llvm::append_range(argTypes, states);
  llvm::append_range(argTypes, params);
  SmallVector<Type> resultTypes(outputs.begin(), outputs.end());
  llvm::append_range(resultTypes, states);
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(
      getFunctionTypeAttrName(state.name),
      TypeAttr::get(builder.getFunctionType(argTypes, resultTypes)));
  state.addAttribute(getNumInputsAttrName(state.name),
                     builder.getI64IntegerAttr(inputs.size()));
  state.addAttribute(getNumStatesAttrName(state.name),
                     builder.getI64IntegerAttr(states.size()));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type type : argTypes)
    block->addArgument(type, state.location);
}

YieldOp CellOp::getYield() {
  return dyn_cast<YieldOp>(getBodyBlock().getTerminator());
}

// Custom form:
//   rnn.cell @name inputs(%x: T, ...) states(%h: T, ...) params(%w: T, ...)
//       -> (output types) attributes {...} { body }
ParseResult CellOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();

  SmallVector<OpAsmParser::Argument> args;
  auto parseGroup = [&](StringRef keyword, bool required,
                        int64_t &count) -> ParseResult {
    if (required) {
      if (parser.parseKeyword(keyword))
        return failure();
    } else if (failed(parser.parseOptionalKeyword(keyword))) {
      count = 0;
      return success();
    }
    size_t before = args.size();
    if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                                 /*allowType=*/true))
      return failure();
    count = args.size() - before;
    return success();
  };
  int64_t numInputs = 0, numStates = 0, numParams = 0;
  if (parseGroup("inputs", /*required=*/true, numInputs) ||
      parseGroup("states", /*required=*/true, numStates) ||
      parseGroup("params", /*required=*/false, numParams))
    return failure();

  SmallVector<Type> outputTypes;
  if (succeeded(parser.parseOptionalArrow()) &&
      parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
            return parser.parseType(outputTypes.emplace_back());
          }))
    return failure();

  SmallVector<Type> argTypes;
  for (const OpAsmParser::Argument &arg : args)
    argTypes.push_back(arg.type);
  SmallVector<Type> resultTypes(outputTypes);
  llvm::append_range(resultTypes,
                     ArrayRef<Type>(argTypes).slice(numInputs, numStates));

  Builder &builder = parser.getBuilder();
  result.addAttribute(
      getFunctionTypeAttrName(result.name),
      TypeAttr::get(builder.getFunctionType(argTypes, resultTypes)));
  result.addAttribute(getNumInputsAttrName(result.name),
                      builder.getI64IntegerAttr(numInputs));
  result.addAttribute(getNumStatesAttrName(result.name),
                      builder.getI64IntegerAttr(numStates));
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  return parser.parseRegion(*body, args);
}

void CellOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  auto printGroup = [&](StringRef keyword, Block::BlockArgListType args) {
    p << ' ' << keyword << '(';
    llvm::interleaveComma(
        args, p, [&](BlockArgument arg) { p.printRegionArgument(arg); });
    p << ')';
  };
  printGroup("inputs", getInputArgs());
  printGroup("states", getStateArgs());
  if (getNumParams() > 0)
    printGroup("params", getParamArgs());
  if (getNumOutputs() > 0) {
    p << " -> (";
    llvm::interleaveComma(getOutputTypes(), p);
    p << ')';
  }
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getSymNameAttrName(), getFunctionTypeAttrName(),
                            getNumInputsAttrName(), getNumStatesAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult CellOp::verify() {
  FunctionType type = getFunctionType();
  int64_t numArgs = type.getNumInputs();
  int64_t numInputs = getNumInputs(), numStates = getNumStates();
  if (numInputs < 1)
    return emitOpError("must take at least one per-step input");
  if (numStates < 1)
    return emitOpError("must carry at least one state");
  if (numInputs + numStates > numArgs)
    return emitOpError() << "declares " << numInputs << " inputs and "
                         << numStates << " states but its type has only "
                         << numArgs << " arguments";
  if (numStates > static_cast<int64_t>(type.getNumResults()))
    return emitOpError() << "declares " << getNumStates()
                         << " states but its type has only "
                         << type.getNumResults() << " results";
  for (auto [i, stateType] : llvm::enumerate(getStateTypes()))
    if (type.getResult(getNumOutputs() + i) != stateType)
      return emitOpError() << "result type of state #" << i << " is "
                           << type.getResult(getNumOutputs() + i)
                           << " but the state is " << stateType;

  // Inputs, states and outputs are [B, N] rows sharing one batch dimension.
  DimAgreement batch(*this, "batch size");
  auto checkRows = [&](StringRef what, ArrayRef<Type> types) -> LogicalResult {
    for (auto [i, t] : llvm::enumerate(types)) {
      if (!isRowTensor(t))
        return emitOpError() << what << " #" << i << " has type " << t
                             << "; expected a [B, N] tensor with a static "
                                "feature size N";
      if (cast<RankedTensorType>(t).getDimSize(1) == 0)
        return emitOpError() << what << " #" << i << " has type " << t
                             << "; its feature size must be positive (a "
                                "zero-size feature leaves the cell nothing "
                                "to compute)";
      if (failed(batch.check(cast<RankedTensorType>(t).getDimSize(0),
                             Twine(what) + " #" + Twine(i))))
        return failure();
    }
    return success();
  };
  if (failed(checkRows("input", getInputTypes())) ||
      failed(checkRows("state", getStateTypes())) ||
      failed(checkRows("output", getOutputTypes())))
    return failure();

  for (auto [i, t] : llvm::enumerate(getParamTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.hasStaticShape())
      return emitOpError() << "parameter #" << i << " has type " << t
                           << "; parameters must be statically shaped tensors";
  }
  return success();
}

LogicalResult CellOp::verifyRegions() {
  Block &block = getBodyBlock();
  ArrayRef<Type> argTypes = getFunctionType().getInputs();
  if (block.getNumArguments() != argTypes.size())
    return emitOpError() << "body has " << block.getNumArguments()
                         << " arguments but the cell's type has "
                         << argTypes.size();
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    if (arg.getType() != argTypes[i])
      return emitOpError() << "body argument #" << i << " has type "
                           << arg.getType() << " but the cell's type says "
                           << argTypes[i];
  if (!getYield())
    return emitOpError("body must end with rnn.yield");
  return success();
}

//===----------------------------------------------------------------------===//
// YieldOp
//===----------------------------------------------------------------------===//

LogicalResult YieldOp::verify() {
  auto cell = cast<CellOp>((*this)->getParentOp());
  ArrayRef<Type> outputTypes = cell.getOutputTypes();
  ArrayRef<Type> stateTypes = cell.getStateTypes();
  if (getOutputs().size() != outputTypes.size())
    return emitOpError() << "yields " << getOutputs().size()
                         << " outputs but cell @" << cell.getSymName()
                         << " declares " << outputTypes.size();
  for (auto [i, value] : llvm::enumerate(getOutputs()))
    if (value.getType() != outputTypes[i])
      return emitOpError() << "output #" << i << " has type " << value.getType()
                           << " but cell @" << cell.getSymName() << " declares "
                           << outputTypes[i];
  if (getStates().size() != stateTypes.size())
    return emitOpError() << "yields " << getStates().size()
                         << " new states but cell @" << cell.getSymName()
                         << " carries " << stateTypes.size();
  for (auto [i, value] : llvm::enumerate(getStates()))
    if (value.getType() != stateTypes[i])
      return emitOpError() << "new state #" << i << " has type "
                           << value.getType() << " but the state is "
                           << stateTypes[i]
                           << "; a state keeps its type across the step";
  return success();
}

//===----------------------------------------------------------------------===//
// Applications of a cell: ScanOp and StepOp
//===----------------------------------------------------------------------===//

/// Checks that `actual`, an operand or result of an application, carries the
/// cell's `[Bc, N]` slot `expected`, with `leading` extra leading dimensions
/// (1 for a sequence `[T, B, N]`, 0 for a row `[B, N]`). A dynamic batch in
/// the cell accepts any batch.
static LogicalResult checkSlot(Operation *op, CellOp cell, StringRef what,
                               size_t index, Type actual, Type expected,
                               unsigned leading) {
  auto actualTensor = cast<RankedTensorType>(actual);
  auto expectedTensor = cast<RankedTensorType>(expected);
  auto fail = [&]() {
    return op->emitOpError()
           << what << " #" << index << " has type " << actual << " but cell @"
           << cell.getSymName() << " expects "
           << (leading ? "a sequence of " : "") << expected;
  };
  if (actualTensor.getElementType() != expectedTensor.getElementType() ||
      actualTensor.getRank() != 2 + leading ||
      actualTensor.getDimSize(1 + leading) != expectedTensor.getDimSize(1))
    return fail();
  int64_t cellBatch = expectedTensor.getDimSize(0);
  if (!ShapedType::isDynamic(cellBatch) &&
      cellBatch != actualTensor.getDimSize(leading))
    return fail();
  return success();
}

/// Resolves the cell an application names, or reports why it cannot.
static FailureOr<CellOp> lookupCell(Operation *op, FlatSymbolRefAttr name,
                                    SymbolTableCollection &symbolTable) {
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(op, name.getAttr());
  if (!symbol)
    return op->emitOpError() << "refers to an unknown cell " << name;
  auto cell = dyn_cast<CellOp>(symbol);
  if (!cell)
    return op->emitOpError() << "refers to " << name << ", which is a '"
                             << symbol->getName() << "', not an rnn.cell";
  return cell;
}

/// Checks the operand or result group `values` of an application against
/// the cell's declared `expected` types: the count and each slot.
static LogicalResult checkGroup(Operation *op, CellOp cell, StringRef what,
                                StringRef cellWhat, TypeRange actual,
                                ArrayRef<Type> expected, unsigned leading) {
  if (actual.size() != expected.size())
    return op->emitOpError() << "has " << actual.size() << " " << what
                             << "s but cell @" << cell.getSymName() << " has "
                             << expected.size() << " " << cellWhat;
  for (auto [i, types] : llvm::enumerate(llvm::zip(actual, expected)))
    if (failed(checkSlot(op, cell, what, i, std::get<0>(types),
                         std::get<1>(types), leading)))
      return failure();
  return success();
}

/// Parameters are passed exactly as the cell declares them.
static LogicalResult checkParams(Operation *op, CellOp cell, TypeRange actual) {
  ArrayRef<Type> expected = cell.getParamTypes();
  if (actual.size() != expected.size())
    return op->emitOpError()
           << "passes " << actual.size() << " params but cell @"
           << cell.getSymName() << " takes " << expected.size();
  for (auto [i, types] : llvm::enumerate(llvm::zip(actual, expected)))
    if (std::get<0>(types) != std::get<1>(types))
      return op->emitOpError()
             << "param #" << i << " has type " << std::get<0>(types)
             << " but cell @" << cell.getSymName() << " takes "
             << std::get<1>(types);
  return success();
}

/// Checks rank and the agreement of batch (and, for sequences, length) over
/// one operand or result group of an application.
static LogicalResult checkShapes(Operation *op, StringRef what, TypeRange types,
                                 unsigned leading, DimAgreement &batch,
                                 DimAgreement *length) {
  for (auto [i, t] : llvm::enumerate(types)) {
    auto tensor = cast<RankedTensorType>(t);
    if (tensor.getRank() != 2 + leading)
      return op->emitOpError()
             << what << " #" << i << " has type " << t << "; expected "
             << (leading ? "a [T, B, N] sequence" : "a [B, N] tensor");
    std::string where = (Twine(what) + " #" + Twine(i)).str();
    if (length && failed(length->check(tensor.getDimSize(0), where)))
      return failure();
    if (failed(batch.check(tensor.getDimSize(leading), where)))
      return failure();
  }
  return success();
}

LogicalResult ScanOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input sequence");
  DimAgreement batch(*this, "batch size");
  DimAgreement length(*this, "sequence length");
  if (failed(checkShapes(*this, "input", getInputs().getTypes(), 1, batch,
                         &length)) ||
      failed(checkShapes(*this, "output", getOutputs().getTypes(), 1, batch,
                         &length)) ||
      failed(checkShapes(*this, "init", getInit().getTypes(), 0, batch,
                         nullptr)) ||
      failed(checkShapes(*this, "final state", getFinalStates().getTypes(), 0,
                         batch, nullptr)))
    return failure();
  if (Value lengths = getLengths())
    if (failed(
            batch.check(cast<RankedTensorType>(lengths.getType()).getDimSize(0),
                        "lengths")))
      return failure();
  if (getInit().size() != getFinalStates().size())
    return emitOpError() << "has " << getInit().size() << " initial states but "
                         << getFinalStates().size() << " final states";
  for (auto [i, types] : llvm::enumerate(
           llvm::zip(getInit().getTypes(), getFinalStates().getTypes())))
    if (std::get<0>(types) != std::get<1>(types))
      return emitOpError() << "final state #" << i << " has type "
                           << std::get<1>(types) << " but its initial state is "
                           << std::get<0>(types);
  return success();
}

LogicalResult ScanOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<CellOp> cell = lookupCell(*this, getCellAttr(), symbolTable);
  if (failed(cell))
    return failure();
  return failure(
      failed(checkGroup(*this, *cell, "input", "inputs", getInputs().getTypes(),
                        cell->getInputTypes(), 1)) ||
      failed(checkGroup(*this, *cell, "init", "states", getInit().getTypes(),
                        cell->getStateTypes(), 0)) ||
      failed(checkParams(*this, *cell, getParams().getTypes())) ||
      failed(checkGroup(*this, *cell, "output", "outputs",
                        getOutputs().getTypes(), cell->getOutputTypes(), 1)));
}

LogicalResult StepOp::verify() {
  DimAgreement batch(*this, "batch size");
  if (failed(checkShapes(*this, "input", getInputs().getTypes(), 0, batch,
                         nullptr)) ||
      failed(checkShapes(*this, "state", getStates().getTypes(), 0, batch,
                         nullptr)) ||
      failed(checkShapes(*this, "output", getOutputs().getTypes(), 0, batch,
                         nullptr)) ||
      failed(checkShapes(*this, "new state", getNewStates().getTypes(), 0,
                         batch, nullptr)))
    return failure();
  if (getStates().size() != getNewStates().size())
    return emitOpError() << "has " << getStates().size() << " states but "
                         << getNewStates().size() << " new states";
  for (auto [i, types] : llvm::enumerate(
           llvm::zip(getStates().getTypes(), getNewStates().getTypes())))
    if (std::get<0>(types) != std::get<1>(types))
      return emitOpError() << "new state #" << i << " has type "
                           << std::get<1>(types) << " but the state is "
                           << std::get<0>(types);
  return success();
}

LogicalResult StepOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<CellOp> cell = lookupCell(*this, getCellAttr(), symbolTable);
  if (failed(cell))
    return failure();
  return failure(
      failed(checkGroup(*this, *cell, "input", "inputs", getInputs().getTypes(),
                        cell->getInputTypes(), 0)) ||
      failed(checkGroup(*this, *cell, "state", "states", getStates().getTypes(),
                        cell->getStateTypes(), 0)) ||
      failed(checkParams(*this, *cell, getParams().getTypes())) ||
      failed(checkGroup(*this, *cell, "output", "outputs",
                        getOutputs().getTypes(), cell->getOutputTypes(), 0)));
}
