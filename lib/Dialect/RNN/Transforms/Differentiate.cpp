//===- Differentiate.cpp - The derived backward of cells and functions ----===//
//
// Backward through time in the dialect. A scan of cell `c` becomes, in the
// training forward, a scan of `c_train` (the same step, which also emits the
// state it started from and the values the save policy keeps), and in the
// backward a scan of `c_adjoint` in the opposite direction. The adjoint cell
// recomputes what was not saved, applies the adjoint rules to the step in
// reverse, and carries the state gradients. Gradients that sum over time
// (weights, biases) and input gradients that are a matmul of a per-step
// gradient leave the loop: the adjoint cell emits the per-step factor and
// the function applies one rnn.outer_sum, rnn.sum_to or rnn.matmul to the
// whole sequence, which is what a hand-written BPTT does with its GEMMs.
// The cells' derivatives are CellDerivative.cpp's; this file rewrites the
// functions that apply them.
//
//===----------------------------------------------------------------------===//

#include "AdjointRules.h"
#include "CellDerivative.h"
#include "CellSignature.h"

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace rnn {
#define GEN_PASS_DEF_DIFFERENTIATE
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;
using namespace rnn::differentiation;

namespace {

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

static StringRef cellNameOf(Operation *application) {
  if (auto scan = dyn_cast<ScanOp>(application))
    return scan.getCell();
  return cast<StepOp>(application).getCell();
}

/// A scan or a step, read uniformly.
struct Application {
  Operation *op;
  CellOp cell;
  ValueRange inputs, init, params, outputs, finals;
  Value lengths;
  bool reverse = false;
  bool isScan;

  static Application of(Operation *op, CellOp cell) {
    Application a{op, cell, {}, {}, {}, {}, {}, {}, false, false};
    if (auto scan = dyn_cast<ScanOp>(op)) {
      a.inputs = scan.getInputs();
      a.init = scan.getInit();
      a.params = scan.getParams();
      a.outputs = scan.getOutputs();
      a.finals = scan.getFinalStates();
      a.lengths = scan.getLengths();
      a.reverse = scan.getReverse();
      a.isScan = true;
    } else {
      auto step = cast<StepOp>(op);
      a.inputs = step.getInputs();
      a.init = step.getStates();
      a.params = step.getParams();
      a.outputs = step.getOutputs();
      a.finals = step.getNewStates();
    }
    return a;
  }

  /// The type at this application of a cell row type `row` ([B, N]): the
  /// application's batch, and the time axis in front for a scan.
  Type perStep(Type row, Value anInput) const {
    auto rowType = cast<RankedTensorType>(row);
    auto input = cast<RankedTensorType>(anInput.getType());
    SmallVector<int64_t> shape;
    if (isScan)
      shape = {input.getDimSize(0), input.getDimSize(1)};
    else
      shape = {input.getDimSize(0)};
    shape.push_back(rowType.getShape().back());
    return RankedTensorType::get(shape, rowType.getElementType());
  }
  Type rowAt(Type row, Value anInit) const {
    auto rowType = cast<RankedTensorType>(row);
    auto init = cast<RankedTensorType>(anInit.getType());
    return RankedTensorType::get(
        {init.getDimSize(0), rowType.getShape().back()},
        rowType.getElementType());
  }
};

/// Creates a scan or step of `cell` like `like`, with the given operands.
static Operation *createApplication(OpBuilder &b, const Application &like,
                                    CellOp cell, ValueRange inputs,
                                    ValueRange init, ValueRange params,
                                    Value lengths, bool reverse) {
  SmallVector<Type> outputTypes, stateTypes;
  for (Type t : cell.getOutputTypes())
    outputTypes.push_back(like.perStep(t, inputs.front()));
  for (auto [t, i] : llvm::zip(cell.getStateTypes(), init))
    stateTypes.push_back(like.rowAt(t, i));
  auto symbol = FlatSymbolRefAttr::get(cell.getSymNameAttr());
  Location loc = like.op->getLoc();
  if (like.isScan)
    return ScanOp::create(b, loc, outputTypes, stateTypes, symbol, inputs, init,
                          params, lengths,
                          reverse ? b.getUnitAttr() : UnitAttr());
  return StepOp::create(b, loc, outputTypes, stateTypes, symbol, inputs, init,
                        params);
}

class FunctionDifferentiator {
public:
  FunctionDifferentiator(ModuleOp module, bool saveGates,
                         llvm::StringMap<CellDerivative> &derivatives,
                         unsigned &numAdjointCells)
      : module(module), symbols(module), saveGates(saveGates),
        derivatives(derivatives), numAdjointCells(numAdjointCells) {}

  LogicalResult run(func::FuncOp func);

private:
  FailureOr<CellDerivative *> derivativeOf(Operation *application);
  LogicalResult adjointOf(const Application &app, CellDerivative &d,
                          ArrayRef<Value> extras, AdjointBuilder &adjoint,
                          IRMapping &primal, OpBuilder &b);

  ModuleOp module;
  SymbolTable symbols;
  bool saveGates;
  llvm::StringMap<CellDerivative> &derivatives;
  unsigned &numAdjointCells;
};

FailureOr<CellDerivative *>
FunctionDifferentiator::derivativeOf(Operation *application) {
  StringRef name = cellNameOf(application);
  auto it = derivatives.find(name);
  if (it != derivatives.end())
    return &it->second;
  auto cell = symbols.lookup<CellOp>(name);
  if (!cell)
    return application->emitOpError() << "refers to no cell @" << name;
  OpBuilder moduleBuilder(module.getContext());
  FailureOr<CellDerivative> d =
      differentiateCell(cell, saveGates, moduleBuilder, symbols);
  if (failed(d))
    return failure();
  ++numAdjointCells;
  return &derivatives.try_emplace(name, std::move(*d)).first->second;
}

static Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

LogicalResult FunctionDifferentiator::adjointOf(
    const Application &app, CellDerivative &d, ArrayRef<Value> extras,
    AdjointBuilder &adjoint, IRMapping &primal, OpBuilder &b) {
  auto p = [&](Value v) { return primal.lookupOrDefault(v); };
  adjoint.loc = app.op->getLoc();
  DenseMap<unsigned, Value> previousStates;
  auto sequenceOf = [&](Source s) -> Value {
    switch (s.kind) {
    case Source::ResultGrad: {
      Value out = app.outputs[s.index];
      Value g = adjoint.gradient(out);
      return g ? g : adjoint.zerosLike(p(out));
    }
    case Source::ForwardInput:
      return p(app.inputs[s.index]);
    case Source::PrevState:
      // A step starts from its states operand; a scan's steps from the
      // output before them where the state is also an output.
      if (!app.isScan)
        return p(app.init[s.index]);
      if (auto it = d.stateOutputs.find(s.index); it != d.stateOutputs.end()) {
        Value &previous = previousStates[s.index];
        if (!previous)
          previous = PreviousStatesOp::create(
              b, app.op->getLoc(), p(app.outputs[it->second]),
              p(app.init[s.index]), app.lengths ? p(app.lengths) : Value(),
              app.reverse);
        return previous;
      }
      [[fallthrough]];
    case Source::Saved:
      for (auto [i, extra] : llvm::enumerate(d.trainExtras))
        if (extra == s)
          return extras[i];
      llvm_unreachable("the train cell emits every source the adjoint reads");
    case Source::Output:
      break;
    }
    llvm_unreachable("outputs are read from the adjoint application");
  };

  SmallVector<Value> inputs, init, params;
  for (Source s : d.adjointInputs)
    inputs.push_back(sequenceOf(s));
  // A final state without a gradient starts from zeros shaped like the
  // initial state (not the final one, which would then have to be saved).
  for (auto [final, start] : llvm::zip(app.finals, app.init)) {
    Value g = adjoint.gradient(final);
    init.push_back(g ? g : adjoint.zerosLike(p(start)));
  }
  for (unsigned q : d.adjointParams)
    params.push_back(p(app.params[q]));
  Value lengths = app.lengths ? p(app.lengths) : Value();
  Operation *backward = createApplication(b, app, d.adjoint, inputs, init,
                                          params, lengths, !app.reverse);
  unsigned numOutputs = d.adjoint.getNumOutputs();
  auto read = [&](Source s) {
    Value v =
        s.kind == Source::Output ? backward->getResult(s.index) : sequenceOf(s);
    return s.element ? adjoint.castTo(v, s.element) : v;
  };

  for (auto [k, state] : llvm::enumerate(app.init))
    adjoint.accumulate(state, backward->getResult(numOutputs + k));
  for (auto [j, input] : llvm::enumerate(app.inputs)) {
    Value total;
    auto addTerm = [&](Value v) { total = total ? adjoint.add(total, v) : v; };
    if (d.inputGradient[j])
      addTerm(read(*d.inputGradient[j]));
    for (const SunkLhsTerm &s : d.sunkLhs)
      if (s.input == j)
        addTerm(adjoint.matmulFlipped(read(s.a), p(app.params[s.param]),
                                      s.weightInOut, s.allowTf32,
                                      elementOf(input)));
    if (total)
      adjoint.accumulate(input, total);
  }
  for (auto [q, param] : llvm::enumerate(app.params)) {
    Value total;
    for (const ParamTerm &t : d.paramTerms) {
      if (t.param != q)
        continue;
      Value v;
      if (t.headwiseGates)
        v = adjoint.headwiseOuterSum(read(t.a), read(t.c), t.headwiseGates,
                                     t.allowTf32,
                                     cast<RankedTensorType>(param.getType()));
      else if (t.outer)
        v = adjoint.outerSum(read(t.a), read(t.c), t.allowTf32,
                             elementOf(param));
      else
        v = adjoint.sumTo(read(t.a), param.getType());
      total = total ? adjoint.add(total, v) : v;
    }
    if (total)
      adjoint.accumulate(param, total);
  }
  return success();
}

LogicalResult FunctionDifferentiator::run(func::FuncOp func) {
  MLIRContext *context = func.getContext();
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // Gradients are tensors of the arguments' and results' types.
  FunctionType type = func.getFunctionType();
  for (auto [kind, types] :
       {std::pair<StringRef, TypeRange>{"argument", type.getInputs()},
        {"result", type.getResults()}})
    for (auto [i, t] : llvm::enumerate(types))
      if (!isa<RankedTensorType>(t))
        return func.emitOpError()
               << "cannot be differentiated: " << kind << " #" << i << " is "
               << t << ", not a ranked tensor";
  for (Operation &op : body.without_terminator())
    if (op.getNumRegions() != 0 && !isa<PointwiseOp>(&op))
      return op.emitOpError() << "has regions; @" << func.getSymName()
                              << " cannot be differentiated";

  // The training forward: the function with its applications replaced by
  // those of the train cells, returning their results as well.
  OpBuilder b(context);
  b.setInsertionPointAfter(func);
  std::string trainName = (func.getSymName() + "_train").str();
  std::string backwardName = (func.getSymName() + "_backward").str();
  for (StringRef name : {StringRef(trainName), StringRef(backwardName)})
    if (symbols.lookup(name))
      return func.emitOpError() << "cannot be differentiated: the module "
                                << "already has a symbol @" << name;
  auto train =
      func::FuncOp::create(b, func.getLoc(), trainName, func.getFunctionType());
  Block *trainBody = train.addEntryBlock();
  IRMapping forward;
  for (auto [from, to] :
       llvm::zip(body.getArguments(), trainBody->getArguments()))
    forward.map(from, to);
  OpBuilder tb = OpBuilder::atBlockEnd(trainBody);
  SmallVector<Value> saved;
  // Per application: the index in `saved` of its first result.
  DenseMap<Operation *, unsigned> savedStart;
  for (Operation &op : body.without_terminator()) {
    if (!isa<ScanOp, StepOp>(&op)) {
      tb.clone(op, forward);
      continue;
    }
    FailureOr<CellDerivative *> d = derivativeOf(&op);
    if (failed(d))
      return failure();
    auto cell = symbols.lookup<CellOp>(cellNameOf(&op));
    Application app = Application::of(&op, cell);
    auto mapped = [&](ValueRange vs) {
      return llvm::map_to_vector(
          vs, [&](Value v) { return forward.lookupOrDefault(v); });
    };
    Operation *trained = createApplication(
        tb, app, (*d)->train, mapped(app.inputs), mapped(app.init),
        mapped(app.params),
        app.lengths ? forward.lookupOrDefault(app.lengths) : Value(),
        app.reverse);
    unsigned numOutputs = app.outputs.size();
    unsigned numExtras = (*d)->trainExtras.size();
    for (auto [i, v] : llvm::enumerate(app.outputs))
      forward.map(v, trained->getResult(i));
    for (auto [k, v] : llvm::enumerate(app.finals))
      forward.map(v, trained->getResult(numOutputs + numExtras + k));
    savedStart[&op] = saved.size();
    llvm::append_range(saved, trained->getResults());
  }
  SmallVector<Value> trainResults;
  for (Value v : ret.getOperands())
    trainResults.push_back(forward.lookupOrDefault(v));
  llvm::append_range(trainResults, saved);
  func::ReturnOp::create(tb, ret.getLoc(), trainResults);

  // The backward: arguments, results, saved values, result gradients in;
  // one gradient per floating-point argument out. It reads the results
  // where it needs them (an LSTM's outputs are its h_{t-1}), so that the
  // training forward does not save a second copy.
  SmallVector<Type> argTypes(func.getArgumentTypes());
  llvm::append_range(argTypes, func.getResultTypes());
  for (Value v : saved)
    argTypes.push_back(v.getType());
  llvm::append_range(argTypes, func.getResultTypes());
  SmallVector<Type> gradTypes;
  SmallVector<unsigned> gradArgs;
  for (BlockArgument arg : body.getArguments())
    if (isa<FloatType>(elementOf(arg))) {
      gradTypes.push_back(arg.getType());
      gradArgs.push_back(arg.getArgNumber());
    }
  auto backward =
      func::FuncOp::create(b, func.getLoc(), backwardName,
                           FunctionType::get(context, argTypes, gradTypes));
  Block *backBody = backward.addEntryBlock();
  unsigned numArgs = func.getNumArguments();
  unsigned numResults = ret.getNumOperands();
  IRMapping primal;
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    primal.map(arg, backBody->getArgument(i));
  auto savedArg = [&](unsigned i) {
    return backBody->getArgument(numArgs + numResults + i);
  };
  // Values f returns are read from the results passed in.
  DenseMap<Value, unsigned> resultIndex;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    resultIndex.try_emplace(v, i);
  auto mapResults = [&](Operation *op) {
    for (Value v : op->getResults())
      if (auto it = resultIndex.find(v); it != resultIndex.end())
        primal.map(v, backBody->getArgument(numArgs + it->second));
  };
  OpBuilder bb = OpBuilder::atBlockEnd(backBody);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator()) {
    ops.push_back(&op);
    if (!isa<ScanOp, StepOp>(&op)) {
      bb.clone(op, primal);
      mapResults(&op);
      continue;
    }
    CellDerivative &d = derivatives.find(cellNameOf(&op))->second;
    unsigned start = savedStart[&op];
    unsigned numOutputs = op.getNumResults() - d.train.getNumStates();
    unsigned numExtras = d.trainExtras.size();
    for (unsigned i = 0; i < numOutputs; ++i)
      primal.map(op.getResult(i), savedArg(start + i));
    for (unsigned k = 0; k < d.train.getNumStates(); ++k)
      primal.map(op.getResult(numOutputs + k),
                 savedArg(start + numOutputs + numExtras + k));
    mapResults(&op);
  }

  class NoSink : public AdjointSink {
  } noSink;
  AdjointBuilder adjoint(bb, primal, noSink);
  adjoint.loc = func.getLoc();
  unsigned numSaved = saved.size();
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (isa<FloatType>(elementOf(v)))
      adjoint.accumulate(
          v, backBody->getArgument(numArgs + numResults + numSaved + i));
  for (Operation *op : llvm::reverse(ops)) {
    if (!isa<ScanOp, StepOp>(op)) {
      if (failed(adjoint.apply(op)))
        return failure();
      continue;
    }
    CellDerivative &d = derivatives.find(cellNameOf(op))->second;
    auto cell = symbols.lookup<CellOp>(cellNameOf(op));
    Application app = Application::of(op, cell);
    unsigned start = savedStart[op] + app.outputs.size();
    SmallVector<Value> extras;
    for (unsigned i = 0; i < d.trainExtras.size(); ++i)
      extras.push_back(savedArg(start + i));
    if (failed(adjointOf(app, d, extras, adjoint, primal, bb)))
      return failure();
  }
  adjoint.loc = func.getLoc();
  SmallVector<Value> grads;
  for (unsigned i : gradArgs) {
    Value g = adjoint.gradient(body.getArgument(i));
    grads.push_back(g ? g : adjoint.zerosLike(backBody->getArgument(i)));
  }
  func::ReturnOp::create(bb, ret.getLoc(), grads);

  // Saved values that the backward does not read are not returned.
  eraseDeadOps(*backBody, [](Operation *op) { return isPure(op); });
  llvm::BitVector unusedArgs(backward.getNumArguments());
  SmallVector<Value> keptSaved;
  for (unsigned i = 0; i < numSaved; ++i) {
    if (savedArg(i).use_empty())
      unusedArgs.set(numArgs + numResults + i);
    else
      keptSaved.push_back(saved[i]);
  }
  if (failed(backward.eraseArguments(unusedArgs)))
    return failure();
  auto trainReturn = cast<func::ReturnOp>(trainBody->getTerminator());
  SmallVector<Value> trainOperands(
      trainReturn.getOperands().take_front(ret.getNumOperands()));
  llvm::append_range(trainOperands, keptSaved);
  trainReturn->setOperands(trainOperands);
  SmallVector<Type> trainResultTypes;
  for (Value v : trainOperands)
    trainResultTypes.push_back(v.getType());
  train.setFunctionType(
      FunctionType::get(context, func.getArgumentTypes(), trainResultTypes));
  eraseDeadOps(*trainBody, [](Operation *op) {
    return isPure(op) && !isa<ScanOp, StepOp>(op);
  });

  // What ties the three together, for the manifest and for readers.
  auto self = FlatSymbolRefAttr::get(func.getSymNameAttr());
  train->setAttr("rnn.training_forward_of", self);
  backward->setAttr("rnn.backward_of", self);
  backward->setAttr("rnn.num_saved", b.getI64IntegerAttr(keptSaved.size()));
  symbols.insert(train);
  symbols.insert(backward);
  return success();
}

/// The cast that rounds `gradient` to 16 bits for every product that reads
/// it, where all its other users are f32 sums; null otherwise.
CastOp roundedForAllProducts(Value gradient) {
  auto type = dyn_cast<RankedTensorType>(gradient.getType());
  if (!type || !type.getElementType().isF32())
    return {};
  CastOp rounded;
  for (Operation *user : gradient.getUsers()) {
    if (auto sum = dyn_cast<SumToOp>(user)) {
      if (!sum.getType().getElementType().isF32())
        return {};
      continue;
    }
    auto cast = dyn_cast<CastOp>(user);
    Type element = cast ? cast.getType().getElementType() : Type();
    // One rounding (CSE merged the adjoint's), read by products alone (the
    // input and weight gradients' GEMMs, and the sums this rewrite made),
    // not a 16-bit result of its own.
    if (!cast || rounded || (!element.isBF16() && !element.isF16()) ||
        !llvm::all_of(cast->getUsers(), [](Operation *reader) {
          return isa<MatmulOp, OuterSumOp, SumToOp>(reader);
        }))
      return {};
    rounded = cast;
  }
  return rounded;
}

/// A gradient that every product of the backward reads rounded to 16 bits
/// (the gate gradients of a bf16 LSTM, read by the GEMMs of the input and
/// weight gradients) and that a sum over rows reads in f32 (its bias
/// gradient) is summed rounded too, in f32: the bias is a weight whose
/// input is 1, and PyTorch's autocast sums a Linear's bias gradient from
/// the same 16-bit gradient its GEMMs read. The f32 gradient is then read
/// by casts alone, and rnn-narrow-scan-outputs stores it in 16 bits.
void sumRoundedGradients(func::FuncOp backward) {
  SmallVector<SumToOp> sums;
  backward.walk([&](SumToOp sum) { sums.push_back(sum); });
  for (SumToOp sum : sums) {
    CastOp rounded = roundedForAllProducts(sum.getInput());
    if (!rounded || rounded->getBlock() != sum->getBlock())
      continue;
    // The sum reads the rounding, which it may come before.
    if (sum->isBeforeInBlock(rounded))
      rounded->moveBefore(sum);
    OpBuilder builder(sum);
    sum.replaceAllUsesWith(
        SumToOp::create(builder, sum.getLoc(), sum.getType(), rounded)
            .getResult());
    sum.erase();
  }
}

struct DifferentiatePass
    : public rnn::impl::DifferentiateBase<DifferentiatePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (save != "gates" && save != "states") {
      module.emitError() << "rnn-differentiate: save=" << save
                         << " is not a policy (expected gates or states)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr("rnn.backward_of") ||
          func->hasAttr("rnn.training_forward_of"))
        continue;
      bool named = llvm::is_contained(functions, func.getSymName().str());
      if (functions.empty() ? func.isPublic() : named)
        funcs.push_back(func);
    }
    for (const std::string &name : functions)
      if (!module.lookupSymbol<func::FuncOp>(name)) {
        module.emitError() << "rnn-differentiate: no function @" << name;
        return signalPassFailure();
      }
    for (func::FuncOp func : funcs)
      for (Operation &op : func.getBody().front())
        if (isa<PointwiseOp>(&op)) {
          op.emitOpError() << "has no adjoint rule: differentiate @"
                           << func.getSymName()
                           << " before rnn-fuse-pointwise (the adjoint is "
                              "fused by the same pass)";
          return signalPassFailure();
        }

    // Parameter-only computations (packed or cast weights) leave the cells
    // first, so that every weight a cell reads is a parameter and its
    // gradient sums over time outside the loop.
    editCells(module, [](CellOp, CellSignatureEditor &) {});

    llvm::StringMap<CellDerivative> derivatives;
    unsigned adjointCells = 0;
    for (func::FuncOp func : funcs) {
      FunctionDifferentiator differentiator(module, save == "gates",
                                            derivatives, adjointCells);
      if (failed(differentiator.run(func)))
        return signalPassFailure();
      ++numFunctions;
    }
    numAdjointCells += adjointCells;
    module.walk([&](func::FuncOp func) {
      if (func->hasAttr("rnn.backward_of"))
        sumRoundedGradients(func);
    });
  }
};

} // namespace
