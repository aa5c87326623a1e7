//===- OverlapKernelLaunches.cpp - Programmatic dependent launch ----------===//
//
// A step is a GEMM and a kernel; a CUDA graph removes the host from the
// loop, but the GPU still idles between two grids while the second one is
// launched. Hopper can schedule a grid while the one ahead of it drains if
// the new grid waits (griddepcontrol.wait) before it touches memory that
// the grids ahead may still write or read, and the host tells the runtime,
// launch by launch, that it may use the attribute. Before that wait, each
// kernel lets the grid behind it launch (griddepcontrol.launch_dependents):
// the runtime's own GEMMs load their constant weights while it waits and
// runs.
//
// A kernel inside a time loop also reads, before its wait, what nothing in
// the loop writes (the step's rows of the hoisted input projection, biases):
// those loads then overlap the grid ahead instead of following it. The
// projection does not fit in L2 at `medium` (78 MiB for the GRU with the
// reset gate first), so its rows come from HBM every step. The host
// orders the loop's first launch after everything before the loop
// (rnn_cuda_order_next_launch), so that no grid that wrote those buffers
// still runs when a kernel of the loop starts.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace rnn {
#define GEN_PASS_DEF_OVERLAPKERNELLAUNCHES
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// Whether the pass already ran on `launch`: a wait anywhere in its body.
bool hasWait(gpu::LaunchOp launch) {
  WalkResult found = launch.getBody().walk([](NVVM::GriddepcontrolOp op) {
    return op.getKind() == NVVM::GridDepActionKind::wait
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// The buffer `value` is a view of: an allocation or a block argument.
Value bufferOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether nothing inside `loop` writes `buffer`, an allocation or a
/// function argument made outside it: every use of it, or of a view of it,
/// inside the loop, kernels included, is a load, a dim or a view. A
/// pointer taken from it may be written through (a GEMM's output), so it
/// counts as a write. Function arguments do not overlap each other
/// (rnn_model_run checks it).
bool readOnlyInLoop(Value buffer, scf::ForOp loop) {
  // Only buffers whose every alias is a view of them: an allocation or an
  // argument of the function (not, say, a loop's iteration argument, which
  // may stand for another buffer each time round).
  Operation *def = buffer.getDefiningOp();
  Operation *owner = def ? def : buffer.getParentBlock()->getParentOp();
  bool root = def ? hasSingleEffect<MemoryEffects::Allocate>(def, buffer)
                  : isa<FunctionOpInterface>(owner) &&
                        buffer.getParentBlock()->isEntryBlock();
  if (!root || loop->isAncestor(owner))
    return false;
  SmallVector<Value> views = {buffer};
  while (!views.empty()) {
    Value view = views.pop_back_val();
    for (Operation *user : view.getUsers()) {
      auto viewOp = dyn_cast<ViewLikeOpInterface>(user);
      if (viewOp && viewOp.getViewSource() == view) {
        views.push_back(viewOp->getResult(0));
        continue;
      }
      if (!loop->isAncestor(user) || isa<memref::LoadOp, memref::DimOp>(user))
        continue;
      return false;
    }
  }
  return true;
}

/// The innermost scf.for around `op` in its function, or null.
scf::ForOp enclosingLoop(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      return loop;
    if (isa<FunctionOpInterface>(parent))
      return nullptr;
  }
  return nullptr;
}

/// Moves `wait` (at the start of `launch`) down to the first operation
/// that touches memory, past the loads of buffers `invariant` accepts,
/// which move up ahead of it. Where the kernel's memory accesses sit in an
/// if (the bounds check of a pointwise kernel) with nothing after it, the
/// wait goes into the if: threads outside the bounds then never wait, but
/// they touch no memory either. Returns whether any load moved; if none
/// did, nothing changed.
bool waitAfterInvariantLoads(gpu::LaunchOp launch, NVVM::GriddepcontrolOp wait,
                             function_ref<bool(memref::LoadOp)> invariant) {
  Block *block = &launch.getBody().front();
  Operation *first = wait->getNextNode();
  auto firstEffect = [](Operation *from) {
    while (from && isMemoryEffectFree(from))
      from = from->getNextNode();
    return from;
  };
  first = firstEffect(first);
  // Into an if that holds every access of the rest of the kernel.
  while (auto guard = dyn_cast_or_null<scf::IfOp>(first)) {
    Operation *after = firstEffect(guard->getNextNode());
    if (guard.getNumResults() != 0 || !guard.getElseRegion().empty() ||
        (after && !after->hasTrait<OpTrait::IsTerminator>()))
      break;
    block = guard.thenBlock();
    first = firstEffect(&block->front());
  }
  if (!first)
    return false;
  // The loads that may come first: what they read does not change, and
  // their indices are already known where the first access is.
  SmallVector<memref::LoadOp> early;
  for (Operation *op = first; op; op = op->getNextNode()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || !invariant(load))
      continue;
    bool ready = llvm::all_of(load->getOperands(), [&](Value operand) {
      Operation *def = operand.getDefiningOp();
      return !def || def->getBlock() != block || def->isBeforeInBlock(first);
    });
    if (ready)
      early.push_back(load);
  }
  if (early.empty())
    return false;
  llvm::SmallPtrSet<Operation *, 16> moving;
  for (memref::LoadOp load : early)
    moving.insert(load);
  // The block ends with a terminator, which is no load.
  Operation *anchor = first;
  while (moving.contains(anchor))
    anchor = anchor->getNextNode();
  for (memref::LoadOp load : early)
    load->moveBefore(anchor);
  wait->moveBefore(anchor);
  return true;
}

struct OverlapKernelLaunchesPass
    : rnn::impl::OverlapKernelLaunchesBase<OverlapKernelLaunchesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    // Whether a launch after a GEMM really overlaps is the runtime's call:
    // it knows which library ran the GEMM (docs/cuda.md).
    // Cluster launches are persistent kernels: their blocks fill the GPU
    // and wait for each other, so they are launched in stream order; so are
    // the block kernels, whose blocks run for the whole sequence (a grid
    // behind them would hold SMs while it waits).
    module.walk([&](gpu::LaunchOp launch) {
      if (!launch.hasClusterSize() &&
          !launch->hasAttr(rnn::kPersistentLaunchAttr) && !hasWait(launch))
        launches.push_back(launch);
    });
    if (launches.empty())
      return;

    auto hookType = FunctionType::get(&getContext(), {}, {});
    if (failed(checkHook(module, function, hookType)) ||
        failed(checkHook(module, orderFunction, hookType)))
      return signalPassFailure();
    declareHook(module, function, hookType);

    // Per loop, which buffers nothing in it writes.
    DenseMap<std::pair<Operation *, Value>, bool> readOnly;
    llvm::SetVector<Operation *> orderedLoops;
    for (gpu::LaunchOp launch : launches) {
      OpBuilder b(launch);
      func::CallOp::create(b, launch.getLoc(), function, TypeRange{},
                           ValueRange{});
      b.setInsertionPointToStart(&launch.getBody().front());
      // Whatever is launched early behind this grid waits for it to
      // complete, so it may be scheduled as soon as every block of this one
      // has started, before this one has finished waiting for its own
      // predecessor: a GEMM of the runtime's behind it then loads its
      // weights during both (triggering after the wait instead made a GRU
      // step slower than with cuBLAS, docs/performance-notes.md).
      // Grids launched in stream order ignore it.
      if (letDependentsLaunch)
        NVVM::GriddepcontrolOp::create(
            b, launch.getLoc(), NVVM::GridDepActionKind::launch_dependents);
      auto wait = NVVM::GriddepcontrolOp::create(b, launch.getLoc(),
                                                 NVVM::GridDepActionKind::wait);

      scf::ForOp loop = earlyLoads ? enclosingLoop(launch) : nullptr;
      if (!loop)
        continue;
      auto invariant = [&](memref::LoadOp load) {
        Value buffer = bufferOf(load.getMemRef());
        // Views made inside the kernel lead to a buffer from outside it.
        if (launch->isAncestor(buffer.getParentRegion()->getParentOp()))
          return false;
        auto [it, inserted] = readOnly.try_emplace({loop, buffer}, false);
        if (inserted)
          it->second = readOnlyInLoop(buffer, loop);
        return it->second;
      };
      // Measured (docs/performance-notes.md; H100, the GRU with the
      // reset gate first at B = 64, H = 1024): 12.20 -> 11.69 µs per step.
      if (waitAfterInvariantLoads(launch, wait, invariant))
        orderedLoops.insert(loop);
    }
    if (orderedLoops.empty())
      return;
    declareHook(module, orderFunction, hookType);
    for (Operation *loop : orderedLoops) {
      OpBuilder b(loop);
      func::CallOp::create(b, loop->getLoc(), orderFunction, TypeRange{},
                           ValueRange{});
    }
  }

private:
  /// A symbol named like the host function `name` with another type than
  /// `type` (no arguments, no results) is an error, not a call that would
  /// not link.
  static LogicalResult checkHook(ModuleOp module, StringRef name,
                                 FunctionType type) {
    auto existing = module.lookupSymbol<func::FuncOp>(name);
    if (!existing || existing.getFunctionType() == type)
      return success();
    return existing.emitOpError()
           << "is named like the launch hook '" << name << "' but has type "
           << existing.getFunctionType() << "; the hook takes and returns "
           << "nothing";
  }

  /// Declares the host function `name` unless the module has it.
  static void declareHook(ModuleOp module, StringRef name, FunctionType type) {
    if (module.lookupSymbol<func::FuncOp>(name))
      return;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    func::FuncOp::create(b, module.getLoc(), name, type).setPrivate();
  }
};

} // namespace
