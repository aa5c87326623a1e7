//===- OutlineLoops.cpp - A function of its own for each large loop -------===//
//
// A model's function holds the time loop of every scan it makes: 2·L of
// them for an L-layer bidirectional network, with the weights and buffers
// of all layers live across all of them. LLVM's optimiser and code
// generator take time that grows faster than the size of a function, so
// the compile time of such a stack grew faster than its depth; with each
// loop in a function of its own it grows linearly. The loops of layers 1 to
// L-1 run the same cell on buffers of the same types: they share one
// function, compiled once.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace rnn {
#define GEN_PASS_DEF_OUTLINELOOPS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// Whether a function argument can carry a value of `type` to every
/// backend: buffers and scalars, not tokens or handles.
bool isPassable(Type type) {
  return isa<MemRefType, IndexType, IntegerType, FloatType>(type);
}

/// The ops nested in `op`, `op` excluded, counted up to `limit`.
unsigned countNestedOps(Operation *op, unsigned limit) {
  unsigned count = 0;
  op->walk([&](Operation *nested) {
    if (nested != op && ++count >= limit)
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return count;
}

/// The buffers that live only for `loop`: allocations before it in its
/// block whose every use is in the loop or a dealloc after it in the block
/// (the scratch buffers hoist-loop-allocations took out of the time loop).
/// They move into the loop's function with their deallocs.
SmallVector<std::pair<memref::AllocOp, memref::DeallocOp>>
scratchBuffers(scf::ForOp loop) {
  SmallVector<std::pair<memref::AllocOp, memref::DeallocOp>> buffers;
  Block *block = loop->getBlock();
  for (Operation &op : *block) {
    if (&op == loop.getOperation())
      break;
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc)
      continue;
    memref::DeallocOp dealloc;
    bool local = true;
    for (Operation *user : alloc->getUsers()) {
      auto free = dyn_cast<memref::DeallocOp>(user);
      if (free && !dealloc && free->getBlock() == block &&
          loop->isBeforeInBlock(free)) {
        dealloc = free;
        continue;
      }
      if (!loop->isProperAncestor(user)) {
        local = false;
        break;
      }
    }
    if (local && dealloc)
      buffers.push_back({alloc, dealloc});
  }
  return buffers;
}

/// Moves `loop`, with its scratch buffers, into a new private function
/// after `after` (its function, or the last function outlined from it) and
/// calls it where the loop was. Returns the new function, or null, changing
/// nothing, when the loop uses or yields a value that cannot be an argument
/// or a result.
func::FuncOp outline(scf::ForOp loop, func::FuncOp parent, Operation *after,
                     SymbolTable &symbols) {
  SmallVector<std::pair<memref::AllocOp, memref::DeallocOp>> scratch =
      scratchBuffers(loop);
  DenseSet<Value> scratchValues;
  llvm::SetVector<Value> fromAbove(loop->getOperands().begin(),
                                   loop->getOperands().end());
  for (auto [alloc, dealloc] : scratch) {
    scratchValues.insert(alloc.getMemref());
    fromAbove.insert(alloc->getOperands().begin(), alloc->getOperands().end());
  }
  getUsedValuesDefinedAbove(loop->getRegions(), fromAbove);
  SmallVector<Value> arguments;
  SmallVector<Operation *> constants;
  for (Value value : fromAbove) {
    if (scratchValues.contains(value))
      continue;
    Operation *def = value.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumResults() == 1) {
      constants.push_back(def);
      continue;
    }
    if (!isPassable(value.getType()))
      return {};
    arguments.push_back(value);
  }
  if (!llvm::all_of(loop.getResultTypes(), isPassable))
    return {};

  Location loc = loop.getLoc();
  OpBuilder builder(after);
  builder.setInsertionPointAfter(after);
  auto type = builder.getFunctionType(ValueRange(arguments).getTypes(),
                                      loop.getResultTypes());
  auto outlined = func::FuncOp::create(
      builder, loc, (parent.getSymName() + "_loop").str(), type);
  outlined.setPrivate();
  // Internal to the model's library, as its name is to the module: not
  // exported, and free for LLVM to drop the arguments it does not read.
  outlined->setAttr(
      "llvm.linkage",
      LLVM::LinkageAttr::get(builder.getContext(), LLVM::Linkage::Internal));
  symbols.insert(outlined); // Unique: _loop, _loop_0, ...
  Block *entry = outlined.addEntryBlock();
  IRMapping mapping;
  mapping.map(arguments, entry->getArguments());
  builder.setInsertionPointToStart(entry);
  for (Operation *constant : constants)
    builder.clone(*constant, mapping);
  for (auto [alloc, dealloc] : scratch)
    builder.clone(*alloc, mapping);
  Operation *moved = builder.clone(*loop, mapping);
  for (auto [alloc, dealloc] : scratch)
    builder.clone(*dealloc, mapping);
  func::ReturnOp::create(builder, loc, moved->getResults());

  builder.setInsertionPoint(loop);
  auto call = func::CallOp::create(builder, loc, outlined, arguments);
  // LLVM would inline a private function called once back into its caller.
  call.setNoInline(true);
  loop->replaceAllUsesWith(call.getResults());
  loop->erase();
  for (auto [alloc, dealloc] : scratch) {
    dealloc->erase();
    alloc->erase();
  }
  return outlined;
}

/// The text of `function` under a fixed name: two functions with the same
/// text compute the same from the same arguments.
std::string textUnderFixedName(func::FuncOp function) {
  StringAttr name = function.getSymNameAttr();
  function.setSymName("outlined");
  std::string text;
  llvm::raw_string_ostream os(text);
  function->print(os, OpPrintingFlags().useLocalScope());
  function.setSymNameAttr(name);
  return text;
}

/// Calls of functions in `outlined` that are identical to an earlier one
/// call that one instead (the scans of layers 1 to L-1 of a stack, which
/// run the same cell on buffers of the same types), and the copies go.
void shareIdentical(ArrayRef<func::FuncOp> outlined, ModuleOp module,
                    SymbolTable &symbols) {
  llvm::StringMap<func::FuncOp> byText;
  DenseMap<StringAttr, func::FuncOp> replaced;
  for (func::FuncOp function : outlined) {
    auto [it, inserted] =
        byText.try_emplace(textUnderFixedName(function), function);
    if (!inserted)
      replaced[function.getSymNameAttr()] = it->second;
  }
  if (replaced.empty())
    return;
  module.walk([&](func::CallOp call) {
    auto it = replaced.find(call.getCalleeAttr().getAttr());
    if (it != replaced.end())
      call.setCallee(it->second.getSymName());
  });
  for (auto &entry : replaced)
    symbols.erase(symbols.lookup(entry.first));
}

struct OutlineLoopsPass : public rnn::impl::OutlineLoopsBase<OutlineLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    SmallVector<func::FuncOp> outlined;
    for (func::FuncOp function : functions) {
      if (function.isExternal())
        continue;
      SmallVector<scf::ForOp> loops;
      for (Block &block : function.getBody())
        for (auto loop : block.getOps<scf::ForOp>())
          if (countNestedOps(loop, minOps) >= minOps)
            loops.push_back(loop);
      // One loop gains nothing from a function of its own.
      if (loops.size() < 2)
        continue;
      Operation *last = function;
      for (scf::ForOp loop : loops)
        if (func::FuncOp made = outline(loop, function, last, symbols)) {
          outlined.push_back(made);
          last = made;
        }
    }
    shareIdentical(outlined, module, symbols);
  }
};

} // namespace
