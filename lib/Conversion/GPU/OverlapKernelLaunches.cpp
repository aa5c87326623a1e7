//===- OverlapKernelLaunches.cpp - Programmatic dependent launch ----------===//
//
// A step is a GEMM and a kernel; a CUDA graph removes the host from the
// loop, but the GPU still idles between two grids while the second one is
// launched. Hopper can schedule a grid while the one ahead of it drains if
// the new grid waits (griddepcontrol.wait) before it touches memory: each of
// our kernels waits at its first instruction, and the host tells the
// runtime, launch by launch, that it may use the attribute. Before that
// wait, each kernel lets the grid behind it launch
// (griddepcontrol.launch_dependents): the runtime's own GEMMs load their
// constant weights while it waits and runs.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace rnn {
#define GEN_PASS_DEF_OVERLAPKERNELLAUNCHES
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// Whether the pass already ran on `launch`: it starts with the wait, or
/// with the trigger and then the wait.
bool startsWithWait(gpu::LaunchOp launch) {
  auto isAction = [](Operation *op, NVVM::GridDepActionKind kind) {
    auto control = dyn_cast_or_null<NVVM::GriddepcontrolOp>(op);
    return control && control.getKind() == kind;
  };
  Operation *first = &launch.getBody().front().front();
  if (isAction(first, NVVM::GridDepActionKind::launch_dependents))
    first = first->getNextNode();
  return isAction(first, NVVM::GridDepActionKind::wait);
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
    // and wait for each other, so they are launched in stream order.
    module.walk([&](gpu::LaunchOp launch) {
      if (!launch.hasClusterSize() && !startsWithWait(launch))
        launches.push_back(launch);
    });
    if (launches.empty())
      return;

    auto hookType = FunctionType::get(&getContext(), {}, {});
    if (auto existing = module.lookupSymbol<func::FuncOp>(function)) {
      if (existing.getFunctionType() != hookType) {
        existing.emitOpError()
            << "is named like the launch hook '" << function
            << "' but has type " << existing.getFunctionType()
            << "; the hook takes and returns nothing";
        return signalPassFailure();
      }
    } else {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      auto hook = func::FuncOp::create(b, module.getLoc(), function, hookType);
      hook.setPrivate();
    }

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
      // step slower than with cuBLAS, bench/experiments/preload_gemm.cu).
      // Grids launched in stream order ignore it.
      if (letDependentsLaunch)
        NVVM::GriddepcontrolOp::create(
            b, launch.getLoc(), NVVM::GridDepActionKind::launch_dependents);
      NVVM::GriddepcontrolOp::create(b, launch.getLoc(),
                                     NVVM::GridDepActionKind::wait);
    }
  }
};

} // namespace
