//===- CellSignature.cpp - Editing a cell and its applications ------------===//

#include "CellSignature.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace rnn {

FailureOr<CellSignatureEditor> CellSignatureEditor::create(CellOp cell) {
  CellSignatureEditor editor(cell);
  Operation *symbolTable = SymbolTable::getNearestSymbolTable(cell);
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(cell, &symbolTable->getRegion(0));
  if (!uses)
    return failure();
  for (const SymbolTable::SymbolUse &use : *uses) {
    Operation *user = use.getUser();
    if (!isa<ScanOp, StepOp>(user))
      return failure();
    editor.applications.push_back(user);
  }
  for (Operation *op : editor.applications) {
    Application app{op, {}, {}, {}};
    if (auto scan = dyn_cast<ScanOp>(op)) {
      app.inputs.assign(scan.getInputs().begin(), scan.getInputs().end());
      app.states.assign(scan.getInit().begin(), scan.getInit().end());
      app.params.assign(scan.getParams().begin(), scan.getParams().end());
    } else {
      auto step = cast<StepOp>(op);
      app.inputs.assign(step.getInputs().begin(), step.getInputs().end());
      app.states.assign(step.getStates().begin(), step.getStates().end());
      app.params.assign(step.getParams().begin(), step.getParams().end());
    }
    editor.operands.push_back(std::move(app));
  }
  return editor;
}

void CellSignatureEditor::buildOperands(
    SmallVector<Value> CellSignatureEditor::Application::*group,
    OperandBuilder build) {
  for (Application &app : operands) {
    OpBuilder builder(app.op);
    (app.*group).push_back(build(builder, app.op));
  }
}

BlockArgument CellSignatureEditor::appendInput(Type rowType,
                                               OperandBuilder build) {
  // Build the operands while the argument numbering is still the old one.
  buildOperands(&Application::inputs, build);
  int64_t numInputs = cell.getNumInputs();
  BlockArgument arg =
      cell.getBodyBlock().insertArgument(numInputs, rowType, cell.getLoc());
  cell.setNumInputs(numInputs + 1);
  return arg;
}

BlockArgument CellSignatureEditor::appendParam(Type type,
                                               OperandBuilder build) {
  buildOperands(&Application::params, build);
  return cell.getBodyBlock().addArgument(type, cell.getLoc());
}

BlockArgument CellSignatureEditor::appendState(Type type,
                                               OperandBuilder build) {
  buildOperands(&Application::states, build);
  int64_t numStates = cell.getNumStates();
  BlockArgument arg = cell.getBodyBlock().insertArgument(
      cell.getNumInputs() + numStates, type, cell.getLoc());
  // The cell's results are its outputs, then its states.
  SmallVector<Type> results(cell.getFunctionType().getResults());
  results.push_back(type);
  cell.setNumStates(numStates + 1);
  cell.setFunctionType(FunctionType::get(
      cell.getContext(), cell.getBodyBlock().getArgumentTypes(), results));
  return arg;
}

Value CellSignatureEditor::getOperandFor(Operation *application,
                                         BlockArgument arg) {
  for (Application &app : operands) {
    if (app.op != application)
      continue;
    int64_t index = arg.getArgNumber();
    int64_t numInputs = cell.getNumInputs(), numStates = cell.getNumStates();
    if (index < numInputs)
      return app.inputs[index];
    if (index < numInputs + numStates)
      return app.states[index - numInputs];
    return app.params[index - numInputs - numStates];
  }
  return {};
}

void CellSignatureEditor::narrowOutput(unsigned index, Type element) {
  SmallVector<Type> results(cell.getFunctionType().getResults());
  results[index] = cast<RankedTensorType>(results[index]).clone(element);
  cell.setFunctionType(FunctionType::get(
      cell.getContext(), cell.getBodyBlock().getArgumentTypes(), results));
  narrowed[index] = element;
}

void CellSignatureEditor::dropUnusedArguments() {
  Block &block = cell.getBodyBlock();
  int64_t numInputs = cell.getNumInputs(), numStates = cell.getNumStates();
  for (int64_t index = block.getNumArguments() - 1; index >= 0; --index) {
    bool isInput = index < numInputs;
    bool isParam = index >= numInputs + numStates;
    if (!(isInput || isParam) || !block.getArgument(index).use_empty())
      continue;
    if (isInput && numInputs == 1)
      continue; // A scan takes its length from an input: keep one.
    block.eraseArgument(index);
    for (Application &app : operands) {
      if (isInput)
        app.inputs.erase(app.inputs.begin() + index);
      else
        app.params.erase(app.params.begin() + (index - numInputs - numStates));
    }
    if (isInput)
      --numInputs;
  }
  cell.setNumInputs(numInputs);
}

void CellSignatureEditor::commit() {
  Block &block = cell.getBodyBlock();
  SmallVector<Type> argTypes(block.getArgumentTypes());
  cell.setFunctionType(FunctionType::get(cell.getContext(), argTypes,
                                         cell.getFunctionType().getResults()));

  for (Application &app : operands) {
    OpBuilder builder(app.op);
    Operation *replacement;
    // States appended to the cell get final-state results of their initial
    // value's type, after the existing ones.
    auto stateTypes = [&](TypeRange existing) {
      SmallVector<Type> types(existing);
      for (Value added : llvm::drop_begin(app.states, existing.size()))
        types.push_back(added.getType());
      return types;
    };
    // Narrowed outputs change their element type.
    auto outputTypes = [&](TypeRange existing) {
      SmallVector<Type> types(existing);
      for (auto [index, element] : narrowed)
        types[index] = cast<RankedTensorType>(types[index]).clone(element);
      return types;
    };
    if (auto scan = dyn_cast<ScanOp>(app.op)) {
      replacement = ScanOp::create(
          builder, scan.getLoc(), outputTypes(scan.getOutputs().getTypes()),
          stateTypes(scan.getFinalStates().getTypes()), scan.getCellAttr(),
          app.inputs, app.states, app.params, scan.getLengths(),
          scan.getReverseAttr());
    } else {
      auto step = cast<StepOp>(app.op);
      replacement = StepOp::create(
          builder, step.getLoc(), outputTypes(step.getOutputs().getTypes()),
          stateTypes(step.getNewStates().getTypes()), step.getCellAttr(),
          app.inputs, app.states, app.params);
    }
    replacement->setDiscardableAttrs(app.op->getDiscardableAttrDictionary());
    // An application may feed another one (a step after a scan): operands
    // recorded for the others must follow the replacement.
    auto remapRecorded = [&](function_ref<Value(Value)> replace) {
      for (Application &other : operands)
        for (SmallVector<Value> *group :
             {&other.inputs, &other.states, &other.params})
          for (Value &value : *group)
            if (Value replaced = replace(value))
              value = replaced;
    };
    remapRecorded([&](Value value) -> Value {
      if (value.getDefiningOp() != app.op)
        return {};
      return replacement->getResult(cast<OpResult>(value).getResultNumber());
    });
    // A narrowed output's readers were casts to its new type: they go.
    for (auto [index, element] : narrowed)
      for (Operation *user :
           llvm::make_early_inc_range(app.op->getResult(index).getUsers())) {
        Value cast = user->getResult(0), narrow = replacement->getResult(index);
        remapRecorded(
            [&](Value value) { return value == cast ? narrow : Value(); });
        cast.replaceAllUsesWith(narrow);
        user->erase();
      }
    app.op->replaceAllUsesWith(
        replacement->getResults().take_front(app.op->getNumResults()));
    app.op->erase();
    app.op = replacement;
  }
  for (auto [i, app] : llvm::enumerate(operands))
    applications[i] = app.op;
}

bool isParameterOnly(CellOp cell, Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &cell.getBodyBlock() &&
           cell.isParamIndex(arg.getArgNumber());
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || !isPure(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isParameterOnly(cell, operand);
  });
}

void collectSlice(Value value, llvm::SetVector<Operation *> &slice) {
  Operation *def = value.getDefiningOp();
  if (!def || slice.contains(def))
    return;
  for (Value operand : def->getOperands())
    collectSlice(operand, slice);
  slice.insert(def);
}

unsigned
editCells(ModuleOp module,
          llvm::function_ref<void(CellOp, CellSignatureEditor &)> edit) {
  unsigned moved = 0;
  SmallVector<CellOp> cells(module.getOps<CellOp>());
  for (CellOp cell : cells) {
    FailureOr<CellSignatureEditor> editor = CellSignatureEditor::create(cell);
    if (failed(editor))
      continue;
    moved += hoistParameterOnlyOps(*editor);
    edit(cell, *editor);
    editor->commit();
  }
  return moved;
}

unsigned hoistParameterOnlyOps(CellSignatureEditor &editor) {
  CellOp cell = editor.getCell();
  Block &block = cell.getBodyBlock();

  // The frontier: results of parameter-only ops read by ops that are not
  // (constants stay: they are free and feed folding).
  SmallVector<Value> frontier;
  for (Operation &op : block.without_terminator()) {
    if (matchPattern(&op, m_Constant()) || op.getNumResults() == 0 ||
        !isParameterOnly(cell, op.getResult(0)))
      continue;
    for (Value result : op.getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return user->getNumResults() == 0 ||
                   !isParameterOnly(cell, user->getResult(0)) ||
                   matchPattern(user, m_Constant());
          }))
        frontier.push_back(result);
  }
  if (frontier.empty())
    return 0;

  // One clone of the moved computation per application, shared by all the
  // frontier values that it computes.
  llvm::SetVector<Operation *> moved;
  llvm::DenseMap<Operation *, IRMapping> clones;
  for (Value value : frontier) {
    llvm::SetVector<Operation *> slice;
    collectSlice(value, slice);
    moved.insert(slice.begin(), slice.end());
    BlockArgument param = editor.appendParam(
        value.getType(), [&](OpBuilder &builder, Operation *application) {
          IRMapping &mapping = clones[application];
          for (BlockArgument arg : cell.getParamArgs())
            if (!mapping.contains(arg))
              mapping.map(arg, editor.getOperandFor(application, arg));
          for (Operation *op : slice)
            if (!mapping.contains(op->getResult(0)))
              builder.clone(*op, mapping);
          return mapping.lookup(value);
        });
    value.replaceAllUsesWith(param);
  }

  // What was moved is now dead inside the cell.
  unsigned erased =
      eraseDeadOps(block, [&](Operation *op) { return moved.contains(op); });
  editor.dropUnusedArguments();
  return erased;
}

unsigned eraseDeadOps(Block &block,
                      llvm::function_ref<bool(Operation *)> mayErase) {
  // Walk a snapshot: erasing while iterating the block in reverse would
  // invalidate the iterator.
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  unsigned erased = 0;
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && mayErase(op)) {
      op->erase();
      ++erased;
    }
  return erased;
}

} // namespace rnn
