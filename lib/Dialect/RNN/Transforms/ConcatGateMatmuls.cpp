//===- ConcatGateMatmuls.cpp - One matmul per shared left operand ---------===//

#include "CellSignature.h"

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"

namespace rnn {
#define GEN_PASS_DEF_CONCATGATEMATMULS
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// Matmuls may merge when they agree on everything but the weight's output
/// size.
struct MergeKey {
  Value lhs;
  bool weightInOut;
  bool allowTf32;
  Type resultElement;
  Type weightElement;
  int64_t contraction;
};

static MergeKey keyOf(MatmulOp matmul) {
  return MergeKey{
      matmul.getLhs(),
      matmul.getWeightInOut(),
      matmul.getAllowTf32(),
      matmul.getType().getElementType(),
      cast<RankedTensorType>(matmul.getRhs().getType()).getElementType(),
      matmul.getContractionSize()};
}

static bool sameKey(const MergeKey &a, const MergeKey &b) {
  return a.lhs == b.lhs && a.weightInOut == b.weightInOut &&
         a.allowTf32 == b.allowTf32 && a.resultElement == b.resultElement &&
         a.weightElement == b.weightElement && a.contraction == b.contraction;
}

/// Replaces `group` (matmuls sharing a key, in program order) by one matmul
/// over the concatenated weights and a split of its result.
static void mergeGroup(CellOp cell, ArrayRef<MatmulOp> group) {
  MatmulOp first = group.front();
  bool inOut = first.getWeightInOut();
  int64_t weightAxis = inOut ? 1 : 0;

  SmallVector<Value> weights;
  int64_t total = 0;
  for (MatmulOp matmul : group) {
    weights.push_back(matmul.getRhs());
    total += matmul.getOutputSize();
  }
  auto firstWeight = cast<RankedTensorType>(first.getRhs().getType());
  SmallVector<int64_t> weightShape(firstWeight.getShape());
  weightShape[weightAxis] = total;

  // The weights are parameters: concatenate them at the top of the body,
  // from where the packing step moves the concatenation out of the cell.
  OpBuilder builder(&cell.getBodyBlock(), cell.getBodyBlock().begin());
  Value packed = ConcatOp::create(
      builder, first.getLoc(),
      RankedTensorType::get(weightShape, firstWeight.getElementType()), weights,
      builder.getI64IntegerAttr(weightAxis));

  builder.setInsertionPoint(first);
  SmallVector<int64_t> resultShape(first.getType().getShape());
  resultShape.back() = total;
  auto merged = MatmulOp::create(
      builder, first.getLoc(),
      RankedTensorType::get(resultShape, first.getType().getElementType()),
      first.getLhs(), packed, /*acc=*/Value(), first.getWeightInOutAttr(),
      first.getAllowTf32Attr());
  SmallVector<Type> pieceTypes;
  for (MatmulOp matmul : group)
    pieceTypes.push_back(matmul.getType());
  auto split = SplitOp::create(builder, first.getLoc(), pieceTypes,
                               merged.getResult(), IntegerAttr());
  for (auto [index, piece] : llvm::enumerate(split.getResults())) {
    MatmulOp matmul = group[index];
    matmul.getResult().replaceAllUsesWith(piece);
    matmul.erase();
  }
}

struct ConcatGateMatmulsPass
    : public rnn::impl::ConcatGateMatmulsBase<ConcatGateMatmulsPass> {
  void runOnOperation() override {
    // Weights computed inside a cell (a split of a parameter, say) become
    // parameters first, so that every mergeable weight is a parameter.
    numWeightOpsPacked += editCells(
        getOperation(), [&](CellOp cell, CellSignatureEditor &editor) {
          SmallVector<SmallVector<MatmulOp>> groups;
          for (MatmulOp matmul : cell.getBodyBlock().getOps<MatmulOp>()) {
            // A matmul that accumulates keeps its own result.
            if (!isParameterOnly(cell, matmul.getRhs()) || matmul.getAcc())
              continue;
            MergeKey key = keyOf(matmul);
            auto it = llvm::find_if(groups, [&](ArrayRef<MatmulOp> group) {
              return sameKey(keyOf(group.front()), key);
            });
            if (it == groups.end())
              groups.push_back({matmul});
            else
              it->push_back(matmul);
          }
          bool changed = false;
          for (ArrayRef<MatmulOp> group : groups) {
            if (group.size() < 2)
              continue;
            mergeGroup(cell, group);
            numMatmulsMerged += group.size();
            ++numConcatenatedMatmuls;
            changed = true;
          }
          if (changed)
            numWeightOpsPacked += hoistParameterOnlyOps(editor);
        });
  }
};

} // namespace
