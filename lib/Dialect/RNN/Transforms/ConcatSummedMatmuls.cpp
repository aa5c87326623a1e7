//===- ConcatSummedMatmuls.cpp - One matmul per sum of recurrent products -===//
//
// A cell that reads several values of a step through matrices of their own
// and adds the products, h·Uᵀ + c·Vᵀ or a·R_aᵀ + b·R_bᵀ, launches one GEMM
// per product and adds the results. The sum is one product over the left
// operands concatenated along K: [h, c]·[U, V]ᵀ. The concatenation of the
// left operands is a pointwise op, so the fusion writes it where its pieces
// are computed (the fused group that computes a and b writes [a, b]; a
// concatenation of states is carried by rnn-carry-state-pointwise and
// written by the previous step's group), and the weights are packed once per
// call. A step then launches one GEMM where it launched one per operand.
//
// Only products that run at the same point of a step merge: their left
// operands come after the same number of dependent matmuls. Merging h·Uᵀ
// (ready at the start of the step) into a·R_aᵀ (ready after the first
// stage) would move a product that the first stage's GEMM computes along
// with the other gates into the second stage's, with twice its K.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "CellSignature.h"
#include "SumTree.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace rnn {
#define GEN_PASS_DEF_CONCATSUMMEDMATMULS
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// Where a value of a cell becomes available in a step: -1 when it depends on
/// no state (inputs, parameters, constants), else the number of dependent
/// matmuls on the longest path from a state to it.
class StepLevels {
public:
  explicit StepLevels(CellOp cell) {
    for (BlockArgument state : cell.getStateArgs())
      levels[state] = 0;
    for (Operation &op : cell.getBodyBlock().without_terminator()) {
      int level = -1;
      for (Value operand : op.getOperands())
        level = std::max(level, of(operand));
      if (auto matmul = dyn_cast<MatmulOp>(op);
          matmul && of(matmul.getLhs()) >= 0)
        level = of(matmul.getLhs()) + 1;
      for (Value result : op.getResults())
        levels[result] = level;
    }
  }

  int of(Value value) const {
    auto it = levels.find(value);
    return it == levels.end() ? -1 : it->second;
  }

private:
  llvm::DenseMap<Value, int> levels;
};

/// Products may merge when they agree on everything but the left operand and
/// K, and run at the same point of the step.
struct MergeKey {
  Type result;
  int64_t lhsRows;
  Type lhsElement;
  Type weightElement;
  bool weightInOut;
  bool allowTf32;
  int level;

  bool operator==(const MergeKey &other) const {
    return result == other.result && lhsRows == other.lhsRows &&
           lhsElement == other.lhsElement &&
           weightElement == other.weightElement &&
           weightInOut == other.weightInOut && allowTf32 == other.allowTf32 &&
           level == other.level;
  }
};

/// A term of a sum that may merge: a [B, N] product of a value that depends
/// on a state with a parameter, read by the sum alone.
bool isMergeable(CellOp cell, const StepLevels &levels, Value leaf) {
  auto matmul = leaf.getDefiningOp<MatmulOp>();
  return matmul && !matmul.getAcc() && matmul->hasOneUse() &&
         matmul.getLhs().getType().getRank() == 2 &&
         levels.of(matmul.getLhs()) >= 0 &&
         isParameterOnly(cell, matmul.getRhs());
}

class SumMerger {
public:
  SumMerger(CellOp cell) : cell(cell), levels(cell) {}

  /// Merges the products of the sum rooted at `root`. Returns how many
  /// products were merged away.
  unsigned merge(AddOp root);

private:
  /// One concatenation per list of left operands, so that sums reading the
  /// same operands (the gates of one cell) share it and
  /// rnn-concat-gate-matmuls then merges their products along N.
  Value concatenate(OpBuilder &builder, Location loc, ArrayRef<Value> pieces,
                    std::optional<int64_t> axis);

  CellOp cell;
  StepLevels levels;
  struct Concat {
    SmallVector<Value> pieces;
    int64_t axis;
    Value result;
  };
  SmallVector<Concat> concats;
};

Value SumMerger::concatenate(OpBuilder &builder, Location loc,
                             ArrayRef<Value> pieces,
                             std::optional<int64_t> axis) {
  for (const Concat &concat : concats)
    if (concat.axis == axis.value_or(-1) &&
        ArrayRef<Value>(concat.pieces) == pieces)
      return concat.result;
  auto first = cast<RankedTensorType>(pieces.front().getType());
  int64_t along = axis.value_or(first.getRank() - 1);
  SmallVector<int64_t> shape(first.getShape());
  shape[along] = 0;
  for (Value piece : pieces)
    shape[along] += cast<RankedTensorType>(piece.getType()).getDimSize(along);
  Value concat = ConcatOp::create(
      builder, loc, RankedTensorType::get(shape, first.getElementType()),
      pieces, axis ? builder.getI64IntegerAttr(*axis) : IntegerAttr());
  concats.push_back({SmallVector<Value>(pieces), axis.value_or(-1), concat});
  return concat;
}

unsigned SumMerger::merge(AddOp root) {
  SmallVector<Value> leaves;
  SmallVector<AddOp> inner;
  collectSum(root, leaves, inner);

  // Products by key, in the order of the sum; one product per left operand
  // (two products of one operand are rnn-concat-gate-matmuls' case).
  SmallVector<std::pair<MergeKey, SmallVector<MatmulOp>>> groups;
  for (Value leaf : leaves) {
    if (!isMergeable(cell, levels, leaf))
      continue;
    auto matmul = leaf.getDefiningOp<MatmulOp>();
    MergeKey key{matmul.getType(),
                 matmul.getLhs().getType().getDimSize(0),
                 matmul.getLhs().getType().getElementType(),
                 matmul.getRhs().getType().getElementType(),
                 matmul.getWeightInOut(),
                 matmul.getAllowTf32(),
                 levels.of(matmul.getLhs())};
    auto it = llvm::find_if(groups, [&](auto &g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {matmul}});
      continue;
    }
    bool sameOperand = llvm::any_of(it->second, [&](MatmulOp other) {
      return other.getLhs() == matmul.getLhs();
    });
    if (!sameOperand)
      it->second.push_back(matmul);
  }
  if (llvm::none_of(groups, [](auto &g) { return g.second.size() > 1; }))
    return 0;

  // The new sum: each merged product where its first term was, then the
  // other leaves in their order.
  OpBuilder builder(root);
  llvm::DenseMap<Value, Value> replacement;
  unsigned merged = 0;
  for (auto &[key, group] : groups) {
    if (group.size() < 2)
      continue;
    MatmulOp first = group.front();
    SmallVector<Value> lhs, weights;
    for (MatmulOp matmul : group) {
      lhs.push_back(matmul.getLhs());
      weights.push_back(matmul.getRhs());
    }
    // Weights are [N, K] (or [K, N] with weight_in_out): K is axis 1 (0).
    Value packedLhs = concatenate(builder, first.getLoc(), lhs, std::nullopt);
    OpBuilder top(&cell.getBodyBlock(), cell.getBodyBlock().begin());
    Value packedWeight = concatenate(top, first.getLoc(), weights,
                                     first.getWeightInOut() ? 0 : 1);
    auto product = MatmulOp::create(
        builder, first.getLoc(), first.getType(), packedLhs, packedWeight,
        /*acc=*/Value(), first.getWeightInOutAttr(), first.getAllowTf32Attr());
    replacement[first.getResult()] = product.getResult();
    for (MatmulOp matmul : ArrayRef(group).drop_front())
      replacement[matmul.getResult()] = Value();
    merged += group.size() - 1;
  }

  // Start from a [B, N] term so that every partial sum keeps the full shape
  // under broadcasting.
  SmallVector<Value> terms;
  for (Value leaf : leaves) {
    auto it = replacement.find(leaf);
    if (it == replacement.end())
      terms.push_back(leaf);
    else if (it->second)
      terms.push_back(it->second);
  }
  auto *full = llvm::find_if(
      terms, [&](Value term) { return term.getType() == root.getType(); });
  if (full != terms.end())
    std::rotate(terms.begin(), full, full + 1);
  Value sum = terms.front();
  for (Value term : ArrayRef(terms).drop_front())
    sum = AddOp::create(builder, root.getLoc(), sum, term);
  root.getResult().replaceAllUsesWith(sum);
  for (AddOp add : inner)
    add->erase();
  for (auto &entry : replacement)
    entry.first.getDefiningOp()->erase();
  return merged;
}

struct ConcatSummedMatmulsPass
    : public rnn::impl::ConcatSummedMatmulsBase<ConcatSummedMatmulsPass> {
  void runOnOperation() override {
    editCells(getOperation(), [&](CellOp cell, CellSignatureEditor &editor) {
      SmallVector<AddOp> roots = sumRoots(cell.getBodyBlock());
      SumMerger merger(cell);
      unsigned merged = 0;
      for (AddOp root : roots)
        merged += merger.merge(root);
      if (!merged)
        return;
      numMatmulsMerged += merged;
      // The packed weights are parameter-only: computed once per call.
      hoistParameterOnlyOps(editor);
    });
  }
};

} // namespace
