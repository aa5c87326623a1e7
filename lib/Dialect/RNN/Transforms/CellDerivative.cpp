//===- CellDerivative.cpp - The training twin and adjoint of a cell -------===//
//
// The adjoint cell runs the adjoint rules (AdjointRules.h) over the step in
// reverse. As their AdjointSink, the differentiator takes out of the step
// what sums over time: parameter gradients (a weight's as an outer product
// over all rows, anything else as a sum) and the gradients of inputs that
// are a matmul with a parameter, which the function then applies to whole
// sequences after the loop.
//
//===----------------------------------------------------------------------===//

#include "CellDerivative.h"

#include "AdjointRules.h"
#include "CellSignature.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace rnn;
using namespace rnn::differentiation;

namespace {

static bool isRowOf(Value v, CellOp cell) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  auto row = cast<RankedTensorType>(cell.getInputTypes().front());
  return type && type.getRank() == 2 &&
         type.getDimSize(0) == row.getDimSize(0) && !type.isDynamicDim(1);
}

/// Builds the adjoint of one cell. As the AdjointSink, it takes the
/// contributions to parameters (and the matmul gradients of inputs) out of
/// the step.
class CellDifferentiator : public AdjointSink {
public:
  CellDifferentiator(CellOp cell, bool saveGates)
      : cell(cell), saveGates(saveGates) {}

  /// Builds the adjoint and train cells after the cell, named uniquely in
  /// `symbols` (the module's table).
  FailureOr<CellDerivative> run(OpBuilder &moduleBuilder, SymbolTable &symbols);

  FailureOr<bool> takeBroadcast(Value operand, Value full,
                                Operation *op) override {
    std::optional<unsigned> param = paramIndex(operand);
    if (!param)
      return false;
    if (!isRowOf(full, cell))
      return op->emitOpError()
             << "cannot derive the gradient of parameter #" << *param
             << " of cell @" << cell.getSymName() << ": it reaches the op "
             << "through " << full.getType() << ", not a [B, N] row";
    pendingTerms.push_back({*param, false, full, Value(), false});
    return true;
  }
  FailureOr<bool> takeWeightGradient(MatmulOp matmul, Value a,
                                     Value c) override {
    std::optional<unsigned> param = paramIndex(matmul.getRhs());
    if (!param)
      return matmul.emitOpError()
             << "has a weight that is not a parameter of cell @"
             << cell.getSymName() << "; its gradient cannot be derived";
    pendingTerms.push_back({*param, true, a, c, matmul.getAllowTf32()});
    return true;
  }
  FailureOr<bool> takeHeadwiseWeightGradient(HeadwiseMatmulOp product,
                                             Value gateMajor,
                                             Value headMajor) override {
    std::optional<unsigned> param = paramIndex(product.getRhs());
    if (!param)
      return product.emitOpError()
             << "has a weight that is not a parameter of cell @"
             << cell.getSymName() << "; its gradient cannot be derived";
    pendingTerms.push_back({*param, true, gateMajor, headMajor,
                            product.getAllowTf32(),
                            static_cast<int64_t>(product.getGates())});
    return true;
  }
  bool takeLhsGradient(MatmulOp matmul, Value g) override {
    // The lhs is an input, or an input cast to the weight's type.
    Value lhsValue = matmul.getLhs();
    if (auto cast = lhsValue.getDefiningOp<CastOp>())
      lhsValue = cast.getInput();
    auto lhs = dyn_cast<BlockArgument>(lhsValue);
    std::optional<unsigned> param = paramIndex(matmul.getRhs());
    if (!lhs || lhs.getOwner() != &cell.getBodyBlock() ||
        !cell.isInputIndex(lhs.getArgNumber()) || !param || !isRowOf(g, cell))
      return false;
    pendingSunk.push_back({unsigned(lhs.getArgNumber()), g, *param,
                           matmul.getWeightInOut(), matmul.getAllowTf32()});
    return true;
  }

private:
  struct PendingTerm {
    unsigned param;
    bool outer;
    Value a, c;
    bool allowTf32;
    int64_t headwiseGates = 0;
  };
  struct PendingSunk {
    unsigned input;
    Value a;
    unsigned param;
    bool weightInOut, allowTf32;
  };

  std::optional<unsigned> paramIndex(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &cell.getBodyBlock() ||
        !cell.isParamIndex(arg.getArgNumber()))
      return std::nullopt;
    return arg.getArgNumber() - cell.getNumInputs() - cell.getNumStates();
  }
  SmallVector<Value> choosePolicySaves();

  CellOp cell;
  bool saveGates;
  SmallVector<PendingTerm> pendingTerms;
  SmallVector<PendingSunk> pendingSunk;
};

/// The end of the chain of single-use additions that `v` feeds.
static Value chainEnd(Value v) {
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (!isa<AddOp, SubOp>(user) || user->getResult(0).getType() != v.getType())
      break;
    v = user->getResult(0);
  }
  return v;
}

static int64_t totalWidth(ArrayRef<Value> values) {
  int64_t width = 0;
  for (Value v : values)
    width += cast<RankedTensorType>(v.getType()).getShape().back();
  return width;
}

/// The values the `gates` policy saves: for every matmul, the end of the
/// chain of single-use additions it feeds (the LSTM's pre-activation gates,
/// W·x + b_W + U·h + b_U), so the adjoint step runs no matmul again. Where
/// a chain ends in a gate split, the chains of its pieces may meet those of
/// another matmul (the GRU's r and z: W_r·x + U_r·h); following them saves
/// less, and is chosen when it does.
SmallVector<Value> CellDifferentiator::choosePolicySaves() {
  if (!saveGates)
    return {};
  llvm::SetVector<Value> whole, pieces;
  for (Operation &op : cell.getBodyBlock()) {
    if (!isa<MatmulOp, HeadwiseMatmulOp>(op) ||
        isParameterOnly(cell, op.getResult(0)))
      continue;
    Value end = chainEnd(op.getResult(0));
    whole.insert(end);
    auto split = end.hasOneUse() ? dyn_cast<SplitOp>(*end.getUsers().begin())
                                 : SplitOp();
    if (!split) {
      pieces.insert(end);
      continue;
    }
    for (Value piece : split.getResults())
      if (!piece.use_empty())
        pieces.insert(chainEnd(piece));
  }
  if (totalWidth(pieces.getArrayRef()) < totalWidth(whole.getArrayRef()))
    return pieces.takeVector();
  return whole.takeVector();
}

FailureOr<CellDerivative> CellDifferentiator::run(OpBuilder &moduleBuilder,
                                                  SymbolTable &symbols) {
  Location loc = cell.getLoc();
  unsigned numInputs = cell.getNumInputs(), numStates = cell.getNumStates();
  unsigned numOutputs = cell.getNumOutputs();
  SmallVector<Value> saves = choosePolicySaves();

  // The adjoint step is built in a detached block with every argument it
  // might read; the unread ones are dropped at the end.
  auto block = std::make_unique<Block>();
  auto addArgs = [&](ArrayRef<Type> types) {
    SmallVector<BlockArgument> args;
    for (Type t : types)
      args.push_back(block->addArgument(t, loc));
    return args;
  };
  SmallVector<Type> saveTypes;
  for (Value v : saves)
    saveTypes.push_back(v.getType());
  SmallVector<BlockArgument> resultGradArgs = addArgs(cell.getOutputTypes());
  SmallVector<BlockArgument> inputArgs = addArgs(cell.getInputTypes());
  SmallVector<BlockArgument> prevStateArgs = addArgs(cell.getStateTypes());
  SmallVector<BlockArgument> savedArgs = addArgs(saveTypes);
  SmallVector<BlockArgument> stateGradArgs = addArgs(cell.getStateTypes());
  SmallVector<BlockArgument> paramArgs = addArgs(cell.getParamTypes());

  // The forward step again, reading saved values where there are some.
  IRMapping primal;
  for (auto [arg, mapped] : llvm::zip(cell.getInputArgs(), inputArgs))
    primal.map(arg, mapped);
  for (auto [arg, mapped] : llvm::zip(cell.getStateArgs(), prevStateArgs))
    primal.map(arg, mapped);
  for (auto [arg, mapped] : llvm::zip(cell.getParamArgs(), paramArgs))
    primal.map(arg, mapped);
  // The block is detached: the builder takes the context from the cell.
  OpBuilder b(cell.getContext());
  b.setInsertionPointToEnd(block.get());
  DenseMap<Value, unsigned> saveIndex;
  for (auto [i, v] : llvm::enumerate(saves))
    saveIndex[v] = i;
  for (Operation &op : cell.getBodyBlock().without_terminator()) {
    b.clone(op, primal);
    for (Value result : op.getResults())
      if (auto it = saveIndex.find(result); it != saveIndex.end())
        primal.map(result, savedArgs[it->second]);
  }

  // The step in reverse.
  AdjointBuilder adjoint(b, primal, *this);
  adjoint.loc = loc;
  YieldOp yield = cell.getYield();
  for (auto [value, grad] : llvm::zip(yield.getOutputs(), resultGradArgs))
    adjoint.accumulate(value, grad);
  for (auto [value, grad] : llvm::zip(yield.getStates(), stateGradArgs))
    adjoint.accumulate(value, grad);
  SmallVector<Operation *> ops;
  for (Operation &op : cell.getBodyBlock().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (failed(adjoint.apply(op)))
      return failure();
  adjoint.loc = loc;
  for (BlockArgument arg : cell.getParamArgs())
    if (Value g = adjoint.gradient(arg)) {
      // Only reachable for a cell whose parameter-only ops stayed inside.
      if (!isRowOf(g, cell))
        return cell.emitOpError() << "cannot derive the gradient of parameter #"
                                  << *paramIndex(arg) << ": it is used through "
                                  << g.getType() << ", not a [B, N] row";
      pendingTerms.push_back({*paramIndex(arg), false, g, Value(), false});
    }

  // Outputs: in-step input gradients, then the per-step factors of the
  // terms, each value once.
  CellDerivative result;
  SmallVector<Value> outputs;
  DenseMap<Value, unsigned> outputIndex;
  auto uncastSourceOf = [&](Value v) -> Source {
    if (auto arg = dyn_cast<BlockArgument>(v);
        arg && arg.getOwner() == block.get()) {
      unsigned n = arg.getArgNumber();
      auto in = [&](unsigned start, unsigned count) {
        return n >= start && n < start + count;
      };
      unsigned start = 0;
      if (in(start, numOutputs))
        return {Source::ResultGrad, n - start};
      start += numOutputs;
      if (in(start, numInputs))
        return {Source::ForwardInput, n - start};
      start += numInputs;
      if (in(start, numStates))
        return {Source::PrevState, n - start};
      start += numStates;
      if (in(start, saves.size()))
        return {Source::Saved, n - start};
      // A state gradient or a parameter: not a per-step value; emit it.
    }
    auto [it, inserted] = outputIndex.try_emplace(v, outputs.size());
    if (inserted)
      outputs.push_back(v);
    return {Source::Output, it->second};
  };
  // A cast (a bf16 copy of an input, of a state or of a gate gradient for
  // the weight-gradient GEMM) is applied to the whole sequence outside the
  // loop; the step emits the value it casts, once.
  auto sourceOf = [&](Value v) -> Source {
    auto cast = v.getDefiningOp<CastOp>();
    if (!cast || cast.getInput().getDefiningOp<CastOp>())
      return uncastSourceOf(v);
    Source s = uncastSourceOf(cast.getInput());
    s.element = cast.getType().getElementType();
    return s;
  };
  for (BlockArgument arg : cell.getInputArgs()) {
    Value g = adjoint.gradient(arg);
    result.inputGradient.push_back(g ? std::optional<Source>(sourceOf(g))
                                     : std::nullopt);
  }
  for (const PendingSunk &s : pendingSunk)
    result.sunkLhs.push_back(
        {s.input, sourceOf(s.a), s.param, s.weightInOut, s.allowTf32});
  for (const PendingTerm &t : pendingTerms)
    result.paramTerms.push_back({t.param, t.outer, sourceOf(t.a),
                                 t.outer ? sourceOf(t.c) : Source{},
                                 t.allowTf32, t.headwiseGates});
  SmallVector<Value> newStateGrads;
  for (auto [arg, prev] : llvm::zip(cell.getStateArgs(), prevStateArgs)) {
    Value g = adjoint.gradient(arg);
    newStateGrads.push_back(g ? g : adjoint.zerosLike(prev));
  }
  YieldOp::create(b, loc, ValueRange(outputs), ValueRange(newStateGrads));

  // Drop what the adjoint step does not need.
  eraseDeadOps(*block, [](Operation *op) { return isPure(op); });
  auto used = [](BlockArgument a) { return !a.use_empty(); };

  // Sources the terms read from outside the step must be sequences the
  // application can pass: the train cell emits the states and saves they
  // name.
  llvm::SetVector<unsigned> neededPrev, neededSaved;
  auto need = [&](Source s) {
    if (s.kind == Source::PrevState)
      neededPrev.insert(s.index);
    if (s.kind == Source::Saved)
      neededSaved.insert(s.index);
  };
  for (const SunkLhsTerm &s : result.sunkLhs)
    need(s.a);
  for (const ParamTerm &t : result.paramTerms) {
    need(t.a);
    if (t.outer)
      need(t.c);
  }

  SmallVector<BlockArgument> keptInputs;
  auto keep = [&](ArrayRef<BlockArgument> args, Source::Kind kind) {
    for (auto [i, arg] : llvm::enumerate(args))
      if (used(arg)) {
        keptInputs.push_back(arg);
        result.adjointInputs.push_back({kind, unsigned(i)});
        need({kind, unsigned(i)});
      }
  };
  keep(resultGradArgs, Source::ResultGrad);
  keep(inputArgs, Source::ForwardInput);
  keep(prevStateArgs, Source::PrevState);
  keep(savedArgs, Source::Saved);
  if (keptInputs.empty()) {
    // A cell takes at least one per-step input.
    keptInputs.push_back(inputArgs.front());
    result.adjointInputs.push_back({Source::ForwardInput, 0});
  }
  SmallVector<BlockArgument> keptParams;
  for (auto [i, arg] : llvm::enumerate(paramArgs))
    if (used(arg)) {
      keptParams.push_back(arg);
      result.adjointParams.push_back(i);
    }

  // The adjoint cell.
  SmallVector<Type> inputTypes, stateTypes, paramTypes, outputTypes;
  for (BlockArgument a : keptInputs)
    inputTypes.push_back(a.getType());
  for (BlockArgument a : stateGradArgs)
    stateTypes.push_back(a.getType());
  for (BlockArgument a : keptParams)
    paramTypes.push_back(a.getType());
  for (Value v : outputs)
    outputTypes.push_back(v.getType());
  moduleBuilder.setInsertionPointAfter(cell);
  auto adjointCell =
      CellOp::create(moduleBuilder, loc, (cell.getSymName() + "_adjoint").str(),
                     inputTypes, stateTypes, paramTypes, outputTypes);
  Block &adjointBody = adjointCell.getBodyBlock();
  {
    unsigned n = 0;
    for (BlockArgument a : keptInputs)
      a.replaceAllUsesWith(adjointBody.getArgument(n++));
    for (BlockArgument a : stateGradArgs)
      a.replaceAllUsesWith(adjointBody.getArgument(n++));
    for (BlockArgument a : keptParams)
      a.replaceAllUsesWith(adjointBody.getArgument(n++));
  }
  adjointBody.getOperations().splice(adjointBody.end(), block->getOperations());
  for (BlockArgument a : block->getArguments())
    if (!a.use_empty())
      return cell.emitOpError("internal error: the adjoint step reads an "
                              "argument it does not take");
  symbols.insert(adjointCell);

  // The train cell: the forward step, also emitting the states it started
  // from and the saved values that the backward reads.
  YieldOp forwardYield = cell.getYield();
  for (auto [k, state] : llvm::enumerate(forwardYield.getStates()))
    for (auto [i, output] : llvm::enumerate(forwardYield.getOutputs()))
      if (output == state && !result.stateOutputs.count(k))
        result.stateOutputs[k] = i;
  for (unsigned k : neededPrev)
    if (!result.stateOutputs.count(k))
      result.trainExtras.push_back({Source::PrevState, k});
  for (unsigned m : neededSaved)
    result.trainExtras.push_back({Source::Saved, m});
  llvm::sort(result.trainExtras, [](Source x, Source y) {
    return std::make_pair(int(x.kind), x.index) <
           std::make_pair(int(y.kind), y.index);
  });
  auto train = cast<CellOp>(moduleBuilder.clone(*cell));
  train.setSymName((cell.getSymName() + "_train").str());
  YieldOp trainYield = train.getYield();
  SmallVector<Value> trainOutputs(trainYield.getOutputs());
  // The clone's values, found by position.
  DenseMap<Operation *, Operation *> cloneOf;
  for (auto [op, cloned] : llvm::zip(cell.getBodyBlock(), train.getBodyBlock()))
    cloneOf[&op] = &cloned;
  for (Source s : result.trainExtras) {
    if (s.kind == Source::PrevState) {
      trainOutputs.push_back(train.getStateArgs()[s.index]);
      continue;
    }
    Value v = saves[s.index];
    if (auto arg = dyn_cast<BlockArgument>(v))
      trainOutputs.push_back(
          train.getBodyBlock().getArgument(arg.getArgNumber()));
    else
      trainOutputs.push_back(cloneOf[v.getDefiningOp()]->getResult(
          cast<OpResult>(v).getResultNumber()));
  }
  SmallVector<Value> trainStates(trainYield.getStates());
  OpBuilder yb(trainYield);
  YieldOp::create(yb, trainYield.getLoc(), ValueRange(trainOutputs),
                  ValueRange(trainStates));
  trainYield.erase();
  SmallVector<Type> resultTypes;
  for (Value v : trainOutputs)
    resultTypes.push_back(v.getType());
  llvm::append_range(resultTypes, cell.getStateTypes());
  train.setFunctionType(FunctionType::get(
      cell.getContext(), cell.getFunctionType().getInputs(), resultTypes));
  symbols.insert(train);

  result.train = train;
  result.adjoint = adjointCell;
  return result;
}

} // namespace

FailureOr<CellDerivative>
rnn::differentiation::differentiateCell(CellOp cell, bool saveGates,
                                        OpBuilder &moduleBuilder,
                                        SymbolTable &symbols) {
  return CellDifferentiator(cell, saveGates).run(moduleBuilder, symbols);
}
