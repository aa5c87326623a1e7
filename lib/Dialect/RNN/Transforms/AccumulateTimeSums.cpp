//===- AccumulateTimeSums.cpp - Sum an output over time in a state --------===//
//
// A derived backward emits, for a parameter that a cell broadcasts into a
// pointwise op (a bias, a layer norm's gain, a peephole vector), the step's
// per-row factor as an output, and after the loop sums the [T, B, N]
// sequence with rnn.sum_to. Where that sequence has no other reader, the
// step writes T·B·N values to memory only for one pass to read them back:
// the LayerNorm LSTM's backward stored five such sequences (about 370 MB at
// T = 100, B = 64, H = 1024) and summed them in five GEMVs over all T·B rows.
// Summing over time in the loop instead, as a state the step adds its
// factor to, keeps a [B, N] accumulator (small enough for the L2 cache) and
// leaves a sum over B rows after the loop. An output that a matmul or an
// outer product also reads (an LSTM's gate gradients, which its weight
// gradients read) stays an output: the sum over its rows costs only the
// read.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "CellSignature.h"

#include "rnn/Dialect/RNN/IR/RNNOps.h"

namespace rnn {
#define GEN_PASS_DEF_ACCUMULATETIMESUMS
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// The type rnn.sum_to accumulates `element` in: f32 for the 16-bit types.
Type accumulationType(Type element) {
  if (element.isF16() || element.isBF16())
    return Float32Type::get(element.getContext());
  return element;
}

/// How an output is summed after the loop: every reader of it, in every
/// application, is an rnn.sum_to that sums over time (its result has a
/// lower rank than the sequence), or an rnn.cast to `castTo` whose readers
/// all are.
struct TimeSum {
  /// The element type the step's values are rounded to before they are
  /// summed (a bf16 backward sums its bf16 gradients in f32), or null.
  Type castTo;
  /// The accumulator's element type.
  Type accumulate;
};

bool sumsOverTime(Operation *user) {
  auto sum = dyn_cast<SumToOp>(user);
  return sum && sum.getType().getRank() <
                    cast<RankedTensorType>(sum.getInput().getType()).getRank();
}

std::optional<TimeSum> timeSumOf(ArrayRef<Operation *> applications,
                                 unsigned index) {
  std::optional<TimeSum> found;
  auto agree = [&](TimeSum sum) {
    if (found &&
        (found->castTo != sum.castTo || found->accumulate != sum.accumulate))
      return false;
    found = sum;
    return true;
  };
  for (Operation *application : applications) {
    Value sequence = application->getResult(index);
    Type element = cast<RankedTensorType>(sequence.getType()).getElementType();
    for (Operation *user : sequence.getUsers()) {
      if (sumsOverTime(user)) {
        if (!agree({Type(), accumulationType(element)}))
          return std::nullopt;
        continue;
      }
      auto cast = dyn_cast<CastOp>(user);
      if (!cast || cast->use_empty() ||
          !llvm::all_of(cast->getUsers(), sumsOverTime))
        return std::nullopt;
      Type rounded = cast.getType().getElementType();
      if (!agree({rounded, accumulationType(rounded)}))
        return std::nullopt;
    }
  }
  return found;
}

/// Zeros of [B, N] (the batch size of `like`, a [B, K] row), built from the
/// dialect's ops: the zero row sums of `like`, broadcast over N.
Value zeroRows(OpBuilder &b, Location loc, Value like, RankedTensorType type) {
  auto likeType = cast<RankedTensorType>(like.getType());
  Value zeros = ZerosLikeOp::create(b, loc, likeType, like);
  Type summed = accumulationType(likeType.getElementType());
  Value column = SumToOp::create(
      b, loc, RankedTensorType::get({likeType.getDimSize(0), 1}, summed),
      zeros);
  if (summed != type.getElementType())
    column = CastOp::create(b, loc,
                            RankedTensorType::get({likeType.getDimSize(0), 1},
                                                  type.getElementType()),
                            column);
  auto row = RankedTensorType::get({type.getDimSize(1)}, type.getElementType());
  Value zero = ConstantOp::create(b, loc, row, b.getF64FloatAttr(0.0));
  return AddOp::create(b, loc, column, zero);
}

struct AccumulateTimeSumsPass
    : public rnn::impl::AccumulateTimeSumsBase<AccumulateTimeSumsPass> {
  void runOnOperation() override {
    SmallVector<CellOp> cells(getOperation().getOps<CellOp>());
    for (CellOp cell : cells) {
      FailureOr<CellSignatureEditor> editor = CellSignatureEditor::create(cell);
      // A step's output is one row per batch row, not a sequence: nothing
      // to sum over time.
      if (failed(editor) || editor->getApplications().empty() ||
          !llvm::all_of(editor->getApplications(), llvm::IsaPred<ScanOp>))
        continue;
      YieldOp yield = cell.getYield();
      SmallVector<Value> outputs(yield.getOutputs());
      SmallVector<Value> newStates(yield.getStates());
      // Per accumulated output: its index and the accumulator's state.
      SmallVector<std::pair<unsigned, BlockArgument>> accumulated;
      for (auto [index, output] : llvm::enumerate(outputs)) {
        // Keep one output: a scan's outputs give the sequences their length.
        if (accumulated.size() + 1 == outputs.size())
          break;
        auto rowType = dyn_cast<RankedTensorType>(output.getType());
        if (!rowType || rowType.getRank() != 2 || rowType.isDynamicDim(1))
          continue;
        std::optional<TimeSum> sum =
            timeSumOf(editor->getApplications(), index);
        if (!sum)
          continue;
        auto accType = rowType.clone(sum->accumulate);
        BlockArgument firstState = cell.getStateArgs().front();
        BlockArgument acc = editor->appendState(
            accType, [&](OpBuilder &builder, Operation *application) {
              return zeroRows(builder, application->getLoc(),
                              editor->getOperandFor(application, firstState),
                              accType);
            });
        OpBuilder builder(yield);
        Location loc = yield.getLoc();
        Value value = output;
        if (sum->castTo)
          value =
              CastOp::create(builder, loc, rowType.clone(sum->castTo), value);
        if (cast<RankedTensorType>(value.getType()).getElementType() !=
            sum->accumulate)
          value = CastOp::create(builder, loc, accType, value);
        newStates.push_back(AddOp::create(builder, loc, acc, value));
        accumulated.push_back({static_cast<unsigned>(index), acc});
        ++numAccumulated;
      }
      if (accumulated.empty())
        continue;
      OpBuilder builder(yield);
      YieldOp::create(builder, yield.getLoc(), outputs, newStates);
      yield.erase();
      editor->commit();

      // After the loop: the sums over time become sums of the final
      // accumulators over the batch.
      for (Operation *application : editor->getApplications()) {
        unsigned firstAccumulator =
            application->getNumResults() - accumulated.size();
        for (auto [k, entry] : llvm::enumerate(accumulated)) {
          Value total = application->getResult(firstAccumulator + k);
          Value sequence = application->getResult(entry.first);
          SmallVector<Operation *> sums;
          for (Operation *user : sequence.getUsers()) {
            if (isa<CastOp>(user))
              llvm::append_range(sums, user->getUsers());
            else
              sums.push_back(user);
          }
          for (Operation *user : sums) {
            auto sumTo = cast<SumToOp>(user);
            OpBuilder after(sumTo);
            sumTo.replaceAllUsesWith(
                SumToOp::create(after, sumTo.getLoc(), sumTo.getType(), total)
                    .getResult());
            sumTo.erase();
          }
          for (Operation *user :
               llvm::make_early_inc_range(sequence.getUsers()))
            user->erase(); // The casts, now unread.
        }
      }
      FailureOr<CellSignatureEditor> cleanup =
          CellSignatureEditor::create(cell);
      if (succeeded(cleanup)) {
        cleanup->dropUnreadOutputs();
        cleanup->commit();
      }
    }
  }
};

} // namespace
