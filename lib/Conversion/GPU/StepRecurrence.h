//===- StepRecurrence.h - A step loop as one product and one group -*- C++
//-*-===//
//
// The step loops that a persistent kernel can run in one launch, as the
// bufferized lowering leaves them: per step, one recurrent product of the
// state S with a weight from outside the loop, and one pointwise group over
// [B, H] that reads the product through its gate windows and writes S.
// Both persistent lowerings (the grid-wide kernel of the device library,
// convert-step-loops-to-persistent-kernels, and the block-local kernel,
// convert-step-loops-to-block-kernels) start from this match; each then
// says which of the matched loops it can run.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_CONVERSION_GPU_STEPRECURRENCE_H
#define RNN_LIB_CONVERSION_GPU_STEPRECURRENCE_H

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>

namespace rnn {

/// A step loop of the form the persistent kernels run: per step, the
/// product P of S [B, H] (f32, bf16 or f16) with the weight, G gate windows
/// of H columns each, f32 sums; one pointwise group over [B, H] that reads
/// P through views at column offsets q*H and rewrites S.
///
/// The product is dense (`S x U^T`, U [G*H, H], the contraction
/// convert-rnn-to-linalg makes of rnn.matmul) or head-wise (rnn.headwise_matmul
/// with NH heads of N = H / NH units: each head's units read only that
/// head's N columns of S through its [G*N, N] matrix). A dense product is
/// the head-wise one with one head: `heads` = 1, N = H.
struct StepRecurrence {
  mlir::scf::ForOp loop;
  /// The product's generic and the group's.
  mlir::linalg::GenericOp matmul;
  mlir::linalg::GenericOp pointwise;
  /// S as [B, H] (for a head-wise product, the buffer its [B, NH, N] view
  /// is of).
  mlir::Value state;
  /// The weight as the product reads it: U [G*H, H], or the head-wise
  /// [NH, G*N, N] (the buffer its [NH, G, N, N] view is of).
  mlir::Value weight;
  /// The product's buffer ([B, G*H], or the head-wise [B, G, NH, N]).
  mlir::Value product;
  /// What the group's gate views select columns of: the product, or the
  /// head-wise product collapsed to [B, G*H].
  mlir::Value gateSource;
  /// The zero fill of the product's buffer, when it does not accumulate.
  mlir::linalg::FillOp fill;
  /// P starts from what its buffer holds (the step's projection) rather
  /// than from zero.
  bool accumulates = false;
  /// The weight is [H, G*H] (`x W`), read as its transpose: only a stage of
  /// a StagedRecurrence, whose weights the kernel's set-up copies.
  bool weightInOut = false;
  bool headwise = false;
  int64_t gates = 0;
  int64_t hidden = 0;
  int64_t heads = 1;
  /// Units of one head (= the head's columns of S the product reads).
  int64_t headSize = 0;
  /// Per pointwise operand, the gate of P it reads, if it is a view of P.
  llvm::SmallVector<std::optional<int64_t>> gateOfOperand;

  mlir::Type stateElementType() const;
  mlir::Type weightElementType() const;
};

/// The recurrence `loop` runs, if it has the form above (see the .cpp for
/// every condition: what the kernels may assume about the group's reads
/// and writes).
mlir::FailureOr<StepRecurrence> matchStepRecurrence(mlir::scf::ForOp loop);

/// A step of m >= 2 dependent stages (the MGU, the GRU with the reset gate
/// first): stage s multiplies its vector V_s [B, H] by its weight
/// [G_s*H, H] into a product of its own, and its group over [B, H] reads
/// that product's gate windows (and V_s and V_{s-1} at the element, and no
/// other stage's vector) and writes V_{s+1}, the next stage's vector, once; the
/// last group writes V_1, the state the step carries. Each stage is a
/// StepRecurrence whose `state` is V_s. V_2 .. V_m are scratch of the loop
/// (the kernel exchanges them without storing them); every buffer a group
/// writes is read by the groups only at the element.
struct StagedRecurrence {
  mlir::scf::ForOp loop;
  llvm::SmallVector<StepRecurrence, 2> stages;
  int64_t hidden = 0;
  /// All stages' gates (the rows a block holds).
  int64_t gates = 0;
};

mlir::FailureOr<StagedRecurrence> matchStagedRecurrence(mlir::scf::ForOp loop);

/// The other order, a derived backward's step: one pointwise group over
/// [B, H] that reads the state S (the state gradient) and writes the G gate
/// windows of P [B, G*H] (the gate gradients), then the transposed product
/// S = P x U (dense: U [G*H, H] read as k x n; head-wise: head h's units of
/// S read only head h's G*N columns of P through its [G*N, N] matrix), which
/// gives the next step's S.
struct AdjointRecurrence {
  mlir::scf::ForOp loop;
  mlir::linalg::GenericOp pointwise;
  mlir::linalg::GenericOp matmul;
  mlir::linalg::FillOp fill; // null where the product accumulates onto S
  /// S [B, H] (f32), P [B, G*H] (as the group writes its windows), the
  /// weight as [G*H, H] or [NH, G*N, N].
  mlir::Value state, gradients, weight;
  bool headwise = false;
  int64_t gates = 0, hidden = 0, heads = 1, headSize = 0;
  /// Per group init, the gate of P it writes, if it is one of P's windows.
  llvm::SmallVector<std::optional<int64_t>> gateOfInit;
  /// Whether the product accumulates onto what the group writes into S (the
  /// GRU's dh_{t-1} = dh ⊙ z + dgates x U) rather than onto a zero fill; the
  /// group's init that is S.
  bool accumulates = false;
  std::optional<unsigned> stateInit;

  mlir::Type gradientElementType() const;
  mlir::Type weightElementType() const;
};

mlir::FailureOr<AdjointRecurrence>
matchAdjointRecurrence(mlir::scf::ForOp loop);

/// The ops of the adjoint step loop's body that compute what its group
/// reads or writes (views a kernel rebuilds from the step index).
llvm::SetVector<mlir::Operation *> opsNeededByGroup(const AdjointRecurrence &r);

/// A scalar op without regions and memory effects.
bool isPureScalarOp(mlir::Operation *op);
bool isIdentity2D(mlir::AffineMap map);
/// (d0, d1) -> (d1): a per-column operand (a bias).
bool isColumnBroadcast(mlir::AffineMap map);
/// The buffer `value` is a view of (through any chain of views), or
/// `value` itself.
mlir::Value underlyingBuffer(mlir::Value value);
/// Whether `value` (used in the step loop) is computed from the step index.
bool dependsOnStep(mlir::Value value, mlir::scf::ForOp loop);
/// Whether `buffer` is scratch of the loop's own (allocated beside it, read
/// by nothing after it).
bool isLoopScratch(mlir::Value buffer, mlir::scf::ForOp loop);
/// The ops of the step loop's body that compute what the group reads or
/// writes, other than the product's windows unless it accumulates (those
/// the kernels compute): the views a kernel rebuilds from the step index.
llvm::SetVector<mlir::Operation *> opsNeededByGroup(const StepRecurrence &r);

/// Whether a persistent kernel for `loop` may run, built before it: the
/// sequence is not empty and the batch B (`state`'s rows) is
/// 0 < B <= `maxBatch` and a multiple of `batchMultiple`. Sets `batch` to B.
mlir::Value buildBatchGuard(mlir::OpBuilder &b, mlir::scf::ForOp loop,
                            mlir::Value state, int64_t maxBatch,
                            int64_t batchMultiple, mlir::Value &batch);

/// What the device library would multiply for `r`'s dense product: bf16,
/// f16, or TF32 for an f32 product that allows it (none for a head-wise
/// product, mixed operand types or an f32 product without TF32).
std::optional<persistent::Operands>
deviceLibraryOperands(const StepRecurrence &r);
std::optional<persistent::Operands>
deviceLibraryOperands(const AdjointRecurrence &r);

/// Whether the device library can run `r` as the grid-wide persistent kernel
/// (convert-step-loops-to-persistent-kernels): a dense product of operands
/// it multiplies, of a (gates, hidden) pair it has entry points for.
bool runsOnDeviceLibrary(const StepRecurrence &r);
/// The same for dependent stages: every stage's product of the same
/// operands, all stages' gates together a (gates, hidden) pair whose layout
/// holds every tile in registers (each stage multiplies only its own).
bool runsOnDeviceLibrary(const StagedRecurrence &r);
/// The same for a derived backward's step loop.
bool runsOnDeviceLibrary(const AdjointRecurrence &r);

/// The largest cluster convert-step-loops-to-block-kernels plans for `r`:
/// `maxClusterSize`, or 1 where `gridKernels` (the grid-wide kernels run
/// next) and the device library can run `r`.
int64_t clusterLimit(const StepRecurrence &r, int64_t maxClusterSize,
                     bool gridKernels);
int64_t clusterLimit(const AdjointRecurrence &r, int64_t maxClusterSize,
                     bool gridKernels);

/// What convert-step-loops-to-block-kernels makes of `r` with
/// `maxSharedBytes` of shared memory a block and clusters of up to
/// `maxClusterSize` blocks: the kernel's shape and the batches it runs for,
/// or why the step loop stays.
std::string describeBlockKernel(const StepRecurrence &r, int64_t maxSharedBytes,
                                int64_t maxClusterSize);
/// The same for a derived backward's step loop (group, then the transposed
/// product).
std::string describeBlockKernel(const AdjointRecurrence &r,
                                int64_t maxSharedBytes, int64_t maxClusterSize);

} // namespace rnn

#endif // RNN_LIB_CONVERSION_GPU_STEPRECURRENCE_H
