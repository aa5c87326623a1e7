//===- PersistentChoice.cpp - Which time loops run as one kernel ----------===//

#include "rnn/Conversion/PersistentChoice.h"

#include "StepRecurrence.h"

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace persistent = rnn::persistent;

/// Whether `loop` is a time loop: an scf.for whose body holds a linalg op
/// (the step's product or kernels) outside any nested loop.
static bool isTimeLoop(scf::ForOp loop) {
  return llvm::any_of(loop.getBody()->getOperations(),
                      [](Operation &op) { return isa<linalg::LinalgOp>(op); });
}

/// Which tiles of `layout` exchange their staged vector through the
/// low-latency buffer, as a clause (empty where none do).
static std::string lowLatencyText(const persistent::Layout &layout,
                                  persistent::Direction direction,
                                  persistent::Operands operands, int hidden) {
  int rows = persistent::lowLatencyMaxRows(layout, direction, operands, hidden);
  if (rows == 0)
    return "";
  return "; tiles of up to " + std::to_string(rows) + " row" +
         (rows == 1 ? "" : "s") +
         " exchange their state through the low-latency buffer";
}

/// What a time loop becomes, given what convert-step-loops-to-block-kernels
/// makes of it (`block`): where the device library runs it (`grid`), the
/// grid-wide kernel takes the batches that the block kernels leave to the
/// step loop, if the layout's batches are among them.
static std::string withGridKernel(const std::string &block, bool grid,
                                  persistent::Direction direction,
                                  std::optional<persistent::Operands> operands,
                                  int64_t gates, int64_t hidden) {
  if (!grid)
    return block;
  persistent::Layout layout =
      persistent::layoutFor(direction, *operands, static_cast<int>(gates),
                            static_cast<int>(persistent::paddedHidden(hidden)));
  std::string kernel =
      "grid-wide persistent kernel (device library, " +
      (*operands == persistent::Operands::TF32 ? "TF32 products, "
                                               : std::string()) +
      (persistent::paddedHidden(hidden) != hidden
           ? "H padded to " + std::to_string(persistent::paddedHidden(hidden)) +
                 ", "
           : std::string()) +
      std::to_string(layout.blocks) + " blocks of " +
      std::to_string(layout.threads) +
      " threads, a copy of them per batch tile of up to " +
      std::to_string(layout.maxBatch) +
      " rows, as many tiles as the GPU's SMs hold (one on a wavefront's "
      "lane)" +
      lowLatencyText(layout, direction, *operands,
                     static_cast<int>(persistent::paddedHidden(hidden))) +
      ") for T of at least " + std::to_string(persistent::kMinSteps);
  StringRef stepLoop = "step loop: ";
  if (StringRef(block).starts_with(stepLoop))
    return kernel + ", the step loop otherwise (no block kernel: " +
           StringRef(block).drop_front(stepLoop.size()).str() + ")";
  return block + "; where the block kernels leave the step loop, the " + kernel;
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
             << withGridKernel(
                    describeBlockKernel(
                        *adjoint, maxSharedBytes,
                        clusterLimit(*adjoint, maxClusterSize, deviceLibrary)),
                    deviceLibrary && runsOnDeviceLibrary(*adjoint),
                    persistent::Direction::Backward,
                    deviceLibraryOperands(*adjoint), adjoint->gates,
                    adjoint->hidden)
             << "\n";
          return;
        }
        if (FailureOr<StagedRecurrence> staged = matchStagedRecurrence(loop);
            succeeded(staged)) {
          os << staged->stages.size() << " dependent stages (";
          for (const StepRecurrence &stage : staged->stages)
            os << (&stage == &staged->stages.front() ? "" : " + ")
               << stage.gates;
          os << " gates), H = " << staged->hidden << ", "
             << staged->stages.front().stateElementType() << ": ";
          if (deviceLibrary && runsOnDeviceLibrary(*staged))
            os << withGridKernel(
                "step loop: the block kernels run one product a step", true,
                persistent::Direction::Forward,
                deviceLibraryOperands(staged->stages.front()), staged->gates,
                staged->hidden);
          else
            os << "step loop: the grid-wide kernel runs dependent stages of "
                  "bf16, f16 or TF32 products of 2 to 4 gates in all at H "
                  "from "
               << persistent::kMinUnpaddedHidden << " to "
               << persistent::kMaxHidden
               << " whose rows a block holds in registers, on sm_90";
          os << "\n";
          return;
        }
        os << "step loop: its step is neither one recurrent product and "
              "one pointwise group over [B, H] that reads the product's "
              "gate windows and writes its state, nor dependent stages of "
              "such products and groups, nor one group and the transposed "
              "product that gives its state gradient (the forms a "
              "persistent kernel runs)\n";
        return;
      }
      os << (r->headwise ? std::to_string(r->heads) + " heads of " +
                               std::to_string(r->headSize) + " units"
                         : "H = " + std::to_string(r->hidden))
         << ", " << r->gates << " gate" << (r->gates == 1 ? "" : "s") << ", "
         << r->stateElementType() << ": ";
      os << withGridKernel(describeBlockKernel(
                               *r, maxSharedBytes,
                               clusterLimit(*r, maxClusterSize, deviceLibrary)),
                           deviceLibrary && runsOnDeviceLibrary(*r),
                           persistent::Direction::Forward,
                           deviceLibraryOperands(*r), r->gates, r->hidden)
         << "\n";
    });
  }
  return text;
}
