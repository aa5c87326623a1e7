//===- PersistentChoice.cpp - Which time loops run as one kernel ----------===//

#include "rnn/Conversion/PersistentChoice.h"

#include "StepRecurrence.h"

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// Whether `loop` is a time loop: an scf.for whose body holds a linalg op
/// (the step's product or kernels) outside any nested loop.
static bool isTimeLoop(scf::ForOp loop) {
  return llvm::any_of(loop.getBody()->getOperations(),
                      [](Operation &op) { return isa<linalg::LinalgOp>(op); });
}

std::string rnn::describePersistentChoices(ModuleOp module,
                                           int64_t maxSharedBytes,
                                           int64_t maxClusterSize,
                                           bool deviceLibrary) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    unsigned index = 0;
    func.walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::LaunchOp>() || !isTimeLoop(loop))
        return;
      if (!index)
        os << "func @" << func.getSymName() << " on the GPU:\n";
      os << "  time loop " << ++index << ": ";
      FailureOr<StepRecurrence> r = matchStepRecurrence(loop);
      if (failed(r)) {
        if (FailureOr<AdjointRecurrence> adjoint = matchAdjointRecurrence(loop);
            succeeded(adjoint)) {
          os << "backward step (the group, then the transposed product"
             << (adjoint->accumulates ? " added to what the group wrote" : "")
             << "), "
             << (adjoint->headwise
                     ? std::to_string(adjoint->heads) + " heads of " +
                           std::to_string(adjoint->headSize) + " units"
                     : "H = " + std::to_string(adjoint->hidden))
             << ", " << adjoint->gates << " gate"
             << (adjoint->gates == 1 ? "" : "s") << ", "
             << adjoint->weightElementType() << ": "
             << describeBlockKernel(*adjoint, maxSharedBytes, maxClusterSize)
             << "\n";
          return;
        }
        os << "step loop: its step is neither one recurrent product and "
              "one pointwise group over [B, H] that reads the product's "
              "gate windows and writes its state, nor one group and the "
              "transposed product that gives its state gradient (the forms "
              "a persistent kernel runs)\n";
        return;
      }
      os << (r->headwise ? std::to_string(r->heads) + " heads of " +
                               std::to_string(r->headSize) + " units"
                         : "H = " + std::to_string(r->hidden))
         << ", " << r->gates << " gate" << (r->gates == 1 ? "" : "s") << ", "
         << r->stateElementType() << ": ";
      std::string block =
          describeBlockKernel(*r, maxSharedBytes, maxClusterSize);
      StringRef stepLoop = "step loop: ";
      if (deviceLibrary && runsOnDeviceLibrary(*r) &&
          StringRef(block).starts_with(stepLoop)) {
        os << "grid-wide persistent kernel (device library) for B of "
           << persistent::kBatchTile << " to "
           << persistent::layoutFor(r->hidden).maxBatch << " in steps of "
           << persistent::kBatchTile << ", the step loop otherwise (no block "
           << "kernel: " << StringRef(block).drop_front(stepLoop.size())
           << ")\n";
        return;
      }
      os << block << "\n";
    });
  }
  return text;
}
