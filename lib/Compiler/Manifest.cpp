//===- Manifest.cpp - The signature a compiled model declares -------------===//
//
// A public function's dynamic sizes (batch, sequence length) are named by
// symbols: sizes that the dialect's verifiers force equal share a symbol,
// found by union-find over the function's ops. The runtime binds the symbols
// from the arguments and computes the result shapes from them.
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Compiler.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace rnn {
namespace {

using DimKey = std::pair<Value, int64_t>;

struct DimUnion {
  llvm::EquivalenceClasses<DimKey> classes;

  void unite(Value a, int64_t da, Value b, int64_t db) {
    auto ta = cast<RankedTensorType>(a.getType());
    auto tb = cast<RankedTensorType>(b.getType());
    if (!ta.isDynamicDim(da) || !tb.isDynamicDim(db))
      return;
    classes.unionSets({a, da}, {b, db});
  }
  /// Unites the trailing-aligned dimensions of `a` and `b` that are dynamic
  /// in both.
  void uniteAligned(Value a, Value b, int64_t skipFromEnd = 0) {
    auto ta = cast<RankedTensorType>(a.getType());
    auto tb = cast<RankedTensorType>(b.getType());
    int64_t n = std::min(ta.getRank(), tb.getRank());
    for (int64_t i = skipFromEnd; i < n; ++i)
      unite(a, ta.getRank() - 1 - i, b, tb.getRank() - 1 - i);
  }
  void uniteAllDims(Value a, Value b, std::optional<int64_t> except = {}) {
    auto ta = cast<RankedTensorType>(a.getType());
    for (int64_t d = 0; d < ta.getRank(); ++d)
      if (!except || d != *except)
        unite(a, d, b, d);
  }
};

static void collectEqualities(func::FuncOp func, DimUnion &dims) {
  func.walk([&](Operation *op) {
    // The scalar body of a fused group has no dimensions; the group itself
    // relates its operands and results.
    if (op->getParentOfType<PointwiseOp>())
      return;
    if (auto scan = dyn_cast<ScanOp>(op)) {
      SmallVector<Value> sequences(scan.getInputs().begin(),
                                   scan.getInputs().end());
      llvm::append_range(sequences, scan.getOutputs());
      SmallVector<Value> rows(scan.getInit().begin(), scan.getInit().end());
      llvm::append_range(rows, scan.getFinalStates());
      Value first = sequences.front();
      for (Value s : sequences) {
        dims.unite(first, 0, s, 0);
        dims.unite(first, 1, s, 1);
      }
      for (Value r : rows)
        dims.unite(first, 1, r, 0);
      if (Value lengths = scan.getLengths())
        dims.unite(first, 1, lengths, 0);
      return;
    }
    if (auto step = dyn_cast<StepOp>(op)) {
      Value first = step.getInputs().front();
      for (Value v : op->getOperands())
        if (!llvm::is_contained(step.getParams(), v))
          dims.unite(first, 0, v, 0);
      for (Value v : op->getResults())
        dims.unite(first, 0, v, 0);
      return;
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      dims.uniteAligned(matmul.getLhs(), matmul.getResult(), 1);
      return;
    }
    if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op)) {
      dims.uniteAligned(headwise.getLhs(), headwise.getResult(), 1);
      return;
    }
    if (auto split = dyn_cast<SplitOp>(op)) {
      for (Value r : split.getResults())
        dims.uniteAllDims(split.getInput(), r, split.getSplitAxis());
      return;
    }
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      for (Value v : concat.getInputs())
        dims.uniteAllDims(concat.getResult(), v, concat.getConcatAxis());
      return;
    }
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      // Sizes move with their dimensions.
      for (auto [i, d] : llvm::enumerate(transpose.getPermutation()))
        dims.unite(transpose.getInput(), d, transpose.getResult(), i);
      return;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      // The dimensions other than static 1s correspond in order.
      auto nonUnit = [](Value v) {
        SmallVector<int64_t> dims;
        for (auto [d, size] :
             llvm::enumerate(cast<RankedTensorType>(v.getType()).getShape()))
          if (size != 1)
            dims.push_back(d);
        return dims;
      };
      SmallVector<int64_t> in = nonUnit(reshape.getInput()),
                           out = nonUnit(reshape.getResult());
      for (auto [a, b] : llvm::zip(in, out))
        dims.unite(reshape.getInput(), a, reshape.getResult(), b);
      return;
    }
    if (isa<OuterSumOp, HeadwiseOuterSumOp>(op)) {
      // The operands share their rows; the result [N, K] is static.
      dims.uniteAligned(op->getOperand(0), op->getOperand(1), 1);
      return;
    }
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op)) {
      dims.uniteAligned(op->getOperand(0), op->getResult(0), 1);
      return;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      return;
    }
    // Pointwise ops and groups: every operand broadcasts to the result.
    if (isa<RNNDialect>(op->getDialect()) && op->getNumResults() > 0) {
      Value result = op->getResult(0);
      for (Value r : op->getResults())
        dims.uniteAllDims(result, r);
      for (Value operand : op->getOperands())
        dims.uniteAligned(operand, result, isa<PointwiseOp>(op) ? 1 : 0);
    }
  });
}

static const char *dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  return nullptr;
}

} // namespace

FailureOr<std::string> buildManifest(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "rnn-manifest 1\n";
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    DimUnion dims;
    collectEqualities(func, dims);
    auto returnOp = cast<func::ReturnOp>(func.getBody().back().getTerminator());

    // Symbols: numbered in order of first appearance among the arguments.
    DenseMap<DimKey, int64_t> symbolOfLeader;
    auto leaderOf = [&](Value v, int64_t d) {
      return dims.classes.getOrInsertLeaderValue({v, d});
    };
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        return func.emitError()
               << "argument #" << arg.getArgNumber() << " has type "
               << arg.getType() << "; a compiled function takes tensors only";
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          symbolOfLeader.try_emplace(leaderOf(arg, d), symbolOfLeader.size());
    }

    os << "function " << func.getSymName() << ' ' << func.getNumArguments()
       << ' ' << returnOp.getNumOperands() << '\n';
    auto describe = [&](StringRef role, unsigned index, Value v,
                        bool isResult) -> LogicalResult {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      const char *dtype = type ? dtypeName(type.getElementType()) : nullptr;
      if (!dtype)
        return func.emitError()
               << role << " #" << index << " has type " << v.getType()
               << "; supported: tensors of f32, f64, bf16, f16, i32, i64";
      os << role << ' ' << index << ' ' << dtype << ' ' << type.getRank();
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d)) {
          os << ' ' << type.getDimSize(d);
          continue;
        }
        auto it = symbolOfLeader.find(leaderOf(v, d));
        if (it == symbolOfLeader.end())
          return func.emitError()
                 << "the size of dimension " << d << " of result #" << index
                 << " does not follow from any argument's size";
        os << " s" << it->second;
      }
      os << '\n';
      (void)isResult;
      return success();
    };
    for (BlockArgument arg : func.getArguments())
      if (failed(describe("arg", arg.getArgNumber(), arg, false)))
        return failure();
    for (auto [i, v] : llvm::enumerate(returnOp.getOperands()))
      if (failed(describe("result", i, v, true)))
        return failure();
    // A differentiated function names its training forward and backward:
    // `training <forward> <backward> <num_saved> <argument indices>`, the
    // backward returning the gradient of each listed argument in order.
    auto self = FlatSymbolRefAttr::get(func.getSymNameAttr());
    func::FuncOp train, backward;
    for (func::FuncOp other : module.getOps<func::FuncOp>()) {
      if (other->getAttr("rnn.training_forward_of") == self)
        train = other;
      if (other->getAttr("rnn.backward_of") == self)
        backward = other;
    }
    if (train && backward) {
      auto saved = backward->getAttrOfType<IntegerAttr>("rnn.num_saved");
      os << "training " << train.getSymName() << ' ' << backward.getSymName()
         << ' ' << (saved ? saved.getInt() : 0);
      for (BlockArgument arg : func.getArguments())
        if (isa<FloatType>(
                cast<RankedTensorType>(arg.getType()).getElementType()))
          os << ' ' << arg.getArgNumber();
      os << '\n';
    }
    os << "end\n";
  }
  return text;
}

} // namespace rnn
