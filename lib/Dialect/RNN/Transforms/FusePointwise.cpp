//===- FusePointwise.cpp - One rnn.pointwise per stage of a cell ----------===//
//
// Groups a cell's pointwise ops by stage and turns each group into one
// rnn.pointwise with a scalar body.
//
// Stages. Every op that is not fusible (a matmul, a concat along another
// axis than the last) starts a new stage: its level is one more than its
// operands'. A fusible op sits at the level of its operands, then moves as
// late as its users allow (so that a peephole product of the previous cell
// state joins the group that reads it), but not past the last level at
// which a fusible op sits (so that a value that is only yielded joins the
// last group, unless what it reads stays in an earlier group anyway: then
// it joins that one). A group is the fusible ops of one level that share
// leading (batch) dimensions; groups of one level never depend on each other,
// and a group only depends on matmuls of its own or lower levels.
//
// Widths. The group iterates over [B, N], N the narrowest row width in it.
// A wider value of width k*N (an LSTM's [B, 4H] gates) is carried as k
// scalars, its pieces at column offsets 0, N, ..., so a split is a choice of
// pieces and reading a wide tensor computed outside is k reads at offsets:
// gates are never copied. A last-axis concat is the concatenation of its
// operands' pieces, and a wide value used outside the group is a result of
// k pieces, each written at its columns: the gate gradients of a backward
// step land in their [B, 4H] tensor without a copy. Row reductions over
// pieces combine per-piece rnn.row_sum / rnn.row_max.
//
// A concat is fusible only if its operands are whole pieces of the group's
// iteration width; which group it falls into is known only once levels are
// assigned, so a group that does not fit with its concats is formed again
// without them (they stay copies between stages, as before).
//
//===----------------------------------------------------------------------===//

#include "CellSignature.h"

#include "rnn/Dialect/RNN/IR/ScalarSemantics.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace rnn {
#define GEN_PASS_DEF_FUSEPOINTWISE
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

/// Ops that become scalar arithmetic in a group (a last-axis split or concat
/// is a choice of pieces).
static bool isFusible(Operation *op) {
  if (auto split = dyn_cast<SplitOp>(op))
    return split.getSplitAxis() == split.getInput().getType().getRank() - 1;
  if (auto concat = dyn_cast<ConcatOp>(op))
    return concat.getConcatAxis() == concat.getType().getRank() - 1;
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, NegOp, SigmoidOp, TanhOp,
             ReluOp, ExpOp, LogOp, SqrtOp, RsqrtOp, CastOp, HeavisideOp,
             ZerosLikeOp, SelectOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
             LayerNormOp>(op);
}

/// Ops with a rank-0 or splat result that every group re-creates in its own
/// body instead of reading: constants, and scalar arithmetic on them.
static bool isInlined(Operation *op) {
  if (isa<ConstantOp>(op))
    return true;
  return isFusible(op) && !isa<SplitOp>(op) &&
         cast<RankedTensorType>(op->getResult(0).getType()).getRank() == 0;
}

static int64_t lastDim(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() == 0 ? 1 : type.getShape().back();
}

static SmallVector<int64_t> leadingDims(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 0)
    return {};
  return SmallVector<int64_t>(type.getShape().drop_back());
}

/// A tensor value as the body sees it: one scalar when it broadcasts along
/// the last axis (width 1), else one scalar per piece of N columns.
struct Pieces {
  SmallVector<Value> scalars;
  bool broadcast = false;
  Value at(size_t piece) const {
    return broadcast ? scalars.front() : scalars[piece];
  }
};

/// Builds one rnn.pointwise from a group of ops.
class GroupBuilder {
public:
  GroupBuilder(CellOp cell, ArrayRef<Operation *> ops)
      : cell(cell), ops(ops.begin(), ops.end()) {}

  /// Builds the group's body, detached from the cell. Returns failure when
  /// the group's widths or outputs do not fit one iteration space; either
  /// way the cell is unchanged.
  LogicalResult prepare();

  /// Replaces the group by one rnn.pointwise (after a successful prepare).
  void commit();

private:
  LogicalResult analyse();
  Pieces &emit(Value value);
  Pieces emitOp(Operation *op, unsigned resultIndex);
  Value scalarConstant(double value, Type type);
  Value rowReduce(const Pieces &pieces, int64_t width, bool isMax);

  CellOp cell;
  llvm::SetVector<Operation *> ops;
  int64_t width = 0;          // N: the iteration width
  SmallVector<Value> outputs; // group values read outside the group
  RankedTensorType iterationType;
  SmallVector<Value> yielded;
  SmallVector<Type> resultTypes;
  SmallVector<int64_t> resultPieces;

  // Body construction.
  OpBuilder body{cell.getContext()};
  SmallVector<Value> inputs;
  SmallVector<int64_t> readOperands, readOffsets;
  SmallVector<Type> readTypes;
  DenseMap<Value, Pieces> emitted;
  DenseMap<Value, int64_t> inputIndex;
  std::unique_ptr<Block> detached;
  Block *block = nullptr;
};

LogicalResult GroupBuilder::analyse() {
  // The narrowest row width in the group is the iteration width; a concat's
  // operands count too, since each must be whole pieces.
  auto consider = [&](Value v) {
    if (lastDim(v) > 1 && (width == 0 || lastDim(v) < width))
      width = lastDim(v);
  };
  for (Operation *op : ops) {
    llvm::for_each(op->getResults(), consider);
    if (isa<ConcatOp>(op))
      llvm::for_each(op->getOperands(), consider);
  }
  if (width == 0)
    return failure();
  auto fits = [&](Value v) {
    int64_t w = lastDim(v);
    return !ShapedType::isDynamic(w) && (w == 1 || w % width == 0);
  };
  auto wholePieces = [&](Value v) {
    int64_t w = lastDim(v);
    return !ShapedType::isDynamic(w) && w % width == 0;
  };
  for (Operation *op : ops) {
    if (!llvm::all_of(op->getResults(), fits) ||
        !llvm::all_of(op->getOperands(), fits))
      return failure();
    // A concat cannot cut a broadcast column into pieces.
    if (isa<ConcatOp>(op) && !llvm::all_of(op->getOperands(), wholePieces))
      return failure();
    for (Value v : op->getResults())
      if (llvm::any_of(v.getUsers(),
                       [&](Operation *user) { return !ops.contains(user); }))
        outputs.push_back(v);
  }
  if (outputs.empty())
    return failure();
  // Every output is k >= 1 pieces of one iteration space [..., N]: the same
  // leading dimensions, a width that is a multiple of N.
  auto first = cast<RankedTensorType>(outputs.front().getType());
  if (first.getRank() < 1)
    return failure();
  for (Value v : outputs) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != first.getRank() ||
        type.getShape().drop_back() != first.getShape().drop_back() ||
        !wholePieces(v))
      return failure();
  }
  SmallVector<int64_t> shape(first.getShape());
  shape.back() = width;
  iterationType = RankedTensorType::get(shape, first.getElementType());
  return success();
}

Value GroupBuilder::scalarConstant(double value, Type type) {
  return arith::ConstantOp::create(body, cell.getLoc(),
                                   body.getFloatAttr(type, value));
}

/// The reduction of a value over its whole row, from its pieces.
Value GroupBuilder::rowReduce(const Pieces &pieces, int64_t valueWidth,
                              bool isMax) {
  Location loc = cell.getLoc();
  if (valueWidth == 1)
    return pieces.at(0); // A single column: its own sum and maximum.
  Value total;
  for (Value piece : pieces.scalars) {
    Value partial = isMax ? Value(RowMaxOp::create(body, loc, piece))
                          : Value(RowSumOp::create(body, loc, piece));
    if (!total)
      total = partial;
    else if (isMax)
      total = arith::MaximumFOp::create(body, loc, total, partial);
    else
      total = arith::AddFOp::create(body, loc, total, partial);
  }
  return total;
}

Pieces &GroupBuilder::emit(Value value) {
  auto it = emitted.find(value);
  if (it != emitted.end())
    return it->second;

  Pieces pieces;
  Operation *def = value.getDefiningOp();
  if (def && (ops.contains(def) || isInlined(def))) {
    pieces = emitOp(def, cast<OpResult>(value).getResultNumber());
  } else {
    // Read from outside: one read per piece, at its column offset.
    auto type = cast<RankedTensorType>(value.getType());
    auto [indexIt, inserted] = inputIndex.try_emplace(value, inputs.size());
    if (inserted)
      inputs.push_back(value);
    int64_t w = lastDim(value);
    pieces.broadcast = w == 1;
    for (int64_t offset = 0; offset < (w == 1 ? 1 : w); offset += width) {
      readOperands.push_back(indexIt->second);
      readOffsets.push_back(offset);
      pieces.scalars.push_back(
          block->addArgument(type.getElementType(), value.getLoc()));
    }
  }
  return emitted[value] = std::move(pieces);
}

Pieces GroupBuilder::emitOp(Operation *op, unsigned resultIndex) {
  Location loc = op->getLoc();
  Type element = cast<RankedTensorType>(op->getResult(resultIndex).getType())
                     .getElementType();
  Pieces result;

  if (auto constant = dyn_cast<ConstantOp>(op)) {
    result.broadcast = true;
    result.scalars.push_back(
        scalarConstant(constant.getValue().convertToDouble(), element));
    return result;
  }

  if (auto concat = dyn_cast<ConcatOp>(op)) {
    for (Value input : concat.getInputs()) {
      Pieces pieces = emit(input); // A copy: emit may grow the map.
      for (int64_t p = 0, e = lastDim(input) / width; p < e; ++p)
        result.scalars.push_back(pieces.at(p));
    }
    return result;
  }

  if (auto split = dyn_cast<SplitOp>(op)) {
    const Pieces &input = emit(split.getInput());
    int64_t start = 0;
    for (unsigned i = 0; i < resultIndex; ++i)
      start += lastDim(split.getResult(i)) / width;
    int64_t count = lastDim(split.getResult(resultIndex)) / width;
    for (int64_t p = 0; p < count; ++p)
      result.scalars.push_back(input.at(start + p));
    return result;
  }

  // Row reductions and normalisation: one scalar per row.
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, LayerNormOp>(op)) {
    Value in = op->getOperand(0);
    const Pieces input = emit(in);
    int64_t inWidth = lastDim(in);
    Value count = scalarConstant(static_cast<double>(inWidth), element);
    if (isa<ReduceMaxOp>(op)) {
      result.broadcast = true;
      result.scalars.push_back(rowReduce(input, inWidth, /*isMax=*/true));
      return result;
    }
    Value sum = rowReduce(input, inWidth, /*isMax=*/false);
    if (isa<ReduceSumOp>(op)) {
      result.broadcast = true;
      result.scalars.push_back(sum);
      return result;
    }
    Value mean =
        inWidth == 1 ? sum : arith::DivFOp::create(body, loc, sum, count);
    if (isa<ReduceMeanOp>(op)) {
      result.broadcast = true;
      result.scalars.push_back(mean);
      return result;
    }
    // Layer normalisation with the biased variance, like torch.
    auto norm = cast<LayerNormOp>(op);
    Pieces centred;
    centred.broadcast = input.broadcast;
    for (Value x : input.scalars)
      centred.scalars.push_back(arith::SubFOp::create(body, loc, x, mean));
    Pieces squares;
    squares.broadcast = centred.broadcast;
    for (Value d : centred.scalars)
      squares.scalars.push_back(arith::MulFOp::create(body, loc, d, d));
    Value sumSquares = rowReduce(squares, inWidth, /*isMax=*/false);
    Value variance = inWidth == 1
                         ? sumSquares
                         : arith::DivFOp::create(body, loc, sumSquares, count);
    Value epsilon =
        scalarConstant(norm.getEpsilon().convertToDouble(), element);
    Value scale = math::RsqrtOp::create(
        body, loc, arith::AddFOp::create(body, loc, variance, epsilon));
    result.broadcast = centred.broadcast;
    for (Value d : centred.scalars)
      result.scalars.push_back(arith::MulFOp::create(body, loc, d, scale));
    return result;
  }

  // Elementwise ops: piece by piece, broadcast operands reused.
  SmallVector<Pieces> operands;
  size_t count = 1;
  bool broadcast = true;
  for (Value operand : op->getOperands()) {
    operands.push_back(emit(operand));
    if (!operands.back().broadcast) {
      broadcast = false;
      count = operands.back().scalars.size();
    }
  }
  result.broadcast = broadcast;
  for (size_t p = 0; p < count; ++p) {
    SmallVector<Value> scalars;
    for (const Pieces &operand : operands)
      scalars.push_back(operand.at(p));
    Value r = buildScalarElementwise(body, loc, op, scalars, element);
    assert(r && "every fusible elementwise op has a scalar form");
    result.scalars.push_back(r);
  }
  return result;
}

LogicalResult GroupBuilder::prepare() {
  if (failed(analyse()))
    return failure();

  // Emit the body into a detached block first: reads are discovered as the
  // body is built.
  detached = std::make_unique<Block>();
  block = detached.get();
  body.setInsertionPointToEnd(block);
  for (Value output : outputs) {
    // An output k times as wide as the iteration space yields its k pieces.
    int64_t count = lastDim(output) / width;
    const Pieces &pieces = emit(output);
    for (int64_t p = 0; p < count; ++p)
      yielded.push_back(pieces.at(p));
    resultTypes.push_back(output.getType());
    resultPieces.push_back(count);
  }

  // Every read must fit the iteration space.
  for (auto [operand, offset] : llvm::zip(readOperands, readOffsets)) {
    auto type = cast<RankedTensorType>(inputs[operand].getType());
    SmallVector<int64_t> lead(type.getShape());
    if (!lead.empty())
      lead.pop_back();
    SmallVector<int64_t> iterLead(iterationType.getShape().drop_back());
    // Leading dims must broadcast: equal, 1, or missing.
    if (lead.size() > iterLead.size())
      return failure();
    for (size_t i = 0; i < lead.size(); ++i) {
      int64_t a = lead[lead.size() - 1 - i];
      int64_t b = iterLead[iterLead.size() - 1 - i];
      if (a != b && a != 1)
        return failure();
    }
  }

  // The terminator goes into the detached block too, so that moving the
  // arguments below also updates a yielded read.
  PointwiseYieldOp::create(body, cell.getLoc(), yielded);
  return success();
}

void GroupBuilder::commit() {
  OpBuilder builder(cell.getBodyBlock().getTerminator());
  auto group = PointwiseOp::create(builder, cell.getLoc(), resultTypes, inputs,
                                   readOperands, readOffsets, resultPieces);
  Block &groupBlock = group.getBodyBlock();
  // Move the body over, argument by argument.
  for (auto [newArg, oldArg] :
       llvm::zip(groupBlock.getArguments(), block->getArguments()))
    oldArg.replaceAllUsesWith(newArg);
  groupBlock.getOperations().splice(groupBlock.end(), block->getOperations());

  for (auto [output, result] : llvm::zip(outputs, group.getResults()))
    output.replaceUsesWithIf(
        result, [&](OpOperand &use) { return !ops.contains(use.getOwner()); });
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct FusePointwisePass
    : public rnn::impl::FusePointwiseBase<FusePointwisePass> {
  void runOnOperation() override {
    for (CellOp cell : getOperation().getOps<CellOp>())
      fuseCell(cell);
  }

  /// The groups of `block`: fusible ops (by `fusible`) of one level with
  /// the same leading dimensions, in program order.
  static SmallVector<SmallVector<Operation *>>
  formGroups(Block &block, function_ref<bool(Operation *)> fusible) {
    // Earliest levels, in program order.
    DenseMap<Operation *, int64_t> level;
    auto levelOf = [&](Value v) -> int64_t {
      Operation *def = v.getDefiningOp();
      return def ? level.lookup(def) : 0;
    };
    for (Operation &op : block.without_terminator()) {
      int64_t l = 0;
      for (Value operand : op.getOperands())
        l = std::max(l, levelOf(operand));
      if (!fusible(&op) && !isInlined(&op))
        ++l;
      level[&op] = l;
    }
    // Then as late as the users allow, but no later than the last level
    // that computes anything fusible: a value that is only yielded (a
    // backward step's cell-state gradient) joins the last group rather than
    // forming one of its own behind a final matmul.
    int64_t lastFusibleLevel = 0;
    for (Operation &op : block.without_terminator())
      if (fusible(&op) && !isInlined(&op))
        lastFusibleLevel = std::max(lastFusibleLevel, level[&op]);
    for (Operation &op : llvm::reverse(block.without_terminator())) {
      if (!fusible(&op) || isInlined(&op))
        continue;
      int64_t late = lastFusibleLevel;
      for (Operation *user : op.getUsers()) {
        if (isa<YieldOp>(user))
          continue;
        if (fusible(user) && !isInlined(user))
          late = std::min(late, level[user]);
        else
          late = std::min(late, level[user] - (isInlined(user) ? 0 : 1));
      }
      level[&op] = std::max(level[&op], late);
    }
    // A value that is only yielded went to the last group with whatever
    // only it reads. When what it reads stays earlier all the same (other
    // ops there need it), it joins the group that computes it: later, that
    // group would write it for the last one to read and write again (the
    // GRU backward's gate gradients, concatenated into the step's output
    // row, were three copy kernels a step).
    for (Operation &op : block.without_terminator()) {
      if (!fusible(&op) || isInlined(&op) || op.use_empty() ||
          !llvm::all_of(op.getUsers(),
                        [](Operation *user) { return isa<YieldOp>(user); }))
        continue;
      int64_t earliest = 0;
      bool joinsAGroup = false;
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != &block || isInlined(def))
          continue;
        earliest = std::max(earliest, level[def]);
      }
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        joinsAGroup |=
            def && def->getBlock() == &block && fusible(def) &&
            !isInlined(def) && level[def] == earliest &&
            leadingDims(def->getResult(0)) == leadingDims(op.getResult(0));
      }
      if (joinsAGroup && earliest < level[&op])
        level[&op] = earliest;
    }

    // Groups: fusible ops of one level with the same leading dimensions.
    llvm::MapVector<std::pair<int64_t, SmallVector<int64_t>>,
                    SmallVector<Operation *>>
        groups;
    for (Operation &op : block.without_terminator())
      if (fusible(&op) && !isInlined(&op))
        groups[{level[&op], leadingDims(op.getResult(0))}].push_back(&op);
    SmallVector<SmallVector<Operation *>> result;
    for (auto &entry : groups)
      result.push_back(std::move(entry.second));
    return result;
  }

  /// The ops that compute `value` from values no group computes (block
  /// arguments, matmul results) through cheap elementwise ops only, in
  /// program order; fails when `value` is not computed that way. Such a
  /// chain (a bias addition of the projection) is cheaper to run again in
  /// each group that reads it than to pass from one group to the next.
  static LogicalResult collectRecomputable(Value value,
                                           llvm::SetVector<Operation *> &ops,
                                           unsigned depth = 0) {
    Operation *def = value.getDefiningOp();
    if (!def || !isFusible(def) || isInlined(def))
      return success();
    if (depth > 4 || !isa<AddOp, SubOp, MulOp, NegOp, CastOp>(def))
      return failure();
    for (Value operand : def->getOperands())
      if (failed(collectRecomputable(operand, ops, depth + 1)))
        return failure();
    ops.insert(def);
    return success();
  }

  /// Whether `value`, computed by `chain`, reads a matmul's result. A
  /// recurrent product with one reader is what the CUDA backend splits into
  /// K slices that the reading kernel adds up; a second reading group makes
  /// it a cuBLAS GEMM with a split-K reduction kernel of its own (the GRU
  /// with the reset gate first: 1.25x -> 1.59x our LSTM's time on an H100),
  /// which costs more than the columns the first group passes through.
  static bool readsMatmul(Value value, ArrayRef<Operation *> chain) {
    auto isProduct = [](Value v) {
      return isa_and_nonnull<MatmulOp>(v.getDefiningOp());
    };
    if (isProduct(value))
      return true;
    return llvm::any_of(chain, [&](Operation *op) {
      return llvm::any_of(op->getOperands(), isProduct);
    });
  }

  /// Gives every user of a split of a value that no group computes (a cell
  /// input such as the hoisted projection, or a bias addition of one) a
  /// split of its own, with its own copy of the addition. Splits of a
  /// matmul's result keep one split (readsMatmul). A split sits at the earliest
  /// level among its users, so one split whose pieces two stages read would
  /// make the first stage's group write the second stage's pieces as results of
  /// its own (pass-through columns) for the second group to read. Each copy
  /// instead joins its user's group, which reads the pieces from the tensor at
  /// their offsets. Copies that end up in no group are merged again
  /// (mergeUnfusedSplits).
  static void splitPerUser(Block &block) {
    SmallVector<SplitOp> splits(block.getOps<SplitOp>());
    for (SplitOp split : splits) {
      llvm::SetVector<Operation *> chain;
      if (!isFusible(split) ||
          failed(collectRecomputable(split.getInput(), chain)) ||
          readsMatmul(split.getInput(), chain.getArrayRef()))
        continue;
      llvm::SetVector<Operation *> users;
      for (Operation *user : split->getUsers())
        users.insert(user);
      OpBuilder builder(split);
      for (Operation *user : llvm::drop_begin(users.getArrayRef())) {
        IRMapping mapping;
        for (Operation *op : chain)
          builder.clone(*op, mapping);
        Operation *copy = builder.clone(*split, mapping);
        for (OpOperand &operand : user->getOpOperands())
          if (operand.get().getDefiningOp() == split)
            operand.set(copy->getResult(
                cast<OpResult>(operand.get()).getResultNumber()));
      }
    }
  }

  /// Undoes splitPerUser for the copies that no group took: one split of a
  /// value is enough outside the groups. (Copies of the chain before such a
  /// split are left to CSE.)
  static void mergeUnfusedSplits(Block &block) {
    SmallVector<SplitOp> splits(block.getOps<SplitOp>());
    for (auto [i, split] : llvm::enumerate(splits)) {
      for (SplitOp earlier : ArrayRef<SplitOp>(splits).take_front(i)) {
        if (!earlier || earlier.getInput() != split.getInput() ||
            earlier->getAttrDictionary() != split->getAttrDictionary() ||
            earlier->getResultTypes() != split->getResultTypes())
          continue;
        split->replaceAllUsesWith(earlier);
        split->erase();
        splits[i] = nullptr;
        break;
      }
    }
  }

  /// A block argument that the cell yields as an output (the training
  /// forward's saved `c_{t-1}`) and a group reads whole becomes a result of
  /// that group. Yielded as it is, the output is a copy of a state buffer
  /// that the group overwrites in place: a temporary and a copy kernel
  /// every step, and a step loop no persistent kernel can run. Written by
  /// the group, it goes straight into its output sequence.
  static bool passArgumentsThroughGroups(CellOp cell) {
    Block &block = cell.getBodyBlock();
    auto yield = cast<YieldOp>(block.getTerminator());
    bool changed = false;
    for (OpOperand &output : yield.getOutputsMutable()) {
      auto argument = dyn_cast<BlockArgument>(output.get());
      if (!argument || argument.getOwner() != &block)
        continue;
      for (PointwiseOp group : llvm::to_vector(block.getOps<PointwiseOp>())) {
        if (group.getIterationType() != argument.getType())
          continue;
        ArrayRef<int64_t> operands = group.getReadOperands();
        ArrayRef<int64_t> offsets = group.getReadOffsets();
        std::optional<unsigned> read;
        for (unsigned r = 0; r < operands.size() && !read; ++r)
          if (group.getInputs()[operands[r]] == argument && offsets[r] == 0)
            read = r;
        if (!read)
          continue;
        SmallVector<Type> types(group.getResultTypes());
        types.push_back(argument.getType());
        SmallVector<int64_t> pieces(group.getNumResults(), 1);
        if (std::optional<ArrayRef<int64_t>> old = group.getResultPieces())
          pieces.assign(old->begin(), old->end());
        pieces.push_back(1);
        OpBuilder builder(group);
        auto widened =
            PointwiseOp::create(builder, group.getLoc(), types,
                                group.getInputs(), operands, offsets, pieces);
        Block &body = widened.getBodyBlock();
        for (auto [to, from] : llvm::zip(body.getArguments(),
                                         group.getBodyBlock().getArguments()))
          from.replaceAllUsesWith(to);
        body.getOperations().splice(body.end(),
                                    group.getBodyBlock().getOperations());
        Operation *terminator = body.getTerminator();
        terminator->insertOperands(terminator->getNumOperands(),
                                   body.getArgument(*read));
        group->replaceAllUsesWith(widened->getResults().drop_back());
        group->erase();
        output.set(widened->getResults().back());
        changed = true;
        break;
      }
    }
    return changed;
  }

  void fuseCell(CellOp cell) {
    Block &block = cell.getBodyBlock();
    splitPerUser(block);
    // Concats that must stay copies: their group does not fit with them.
    // Each round keeps at least one more, so this ends.
    DenseSet<Operation *> keptConcats;
    auto fusible = [&](Operation *op) {
      return isFusible(op) && !keptConcats.contains(op);
    };
    SmallVector<SmallVector<Operation *>> groups;
    while (true) {
      groups = formGroups(block, fusible);
      bool regroup = false;
      for (ArrayRef<Operation *> ops : groups) {
        if (llvm::none_of(ops, llvm::IsaPred<ConcatOp>))
          continue;
        // A trial: the body is built detached and thrown away.
        if (succeeded(GroupBuilder(cell, ops).prepare()))
          continue;
        for (Operation *op : ops)
          if (isa<ConcatOp>(op))
            keptConcats.insert(op);
        regroup = true;
      }
      if (!regroup)
        break;
    }

    bool changed = false;
    for (ArrayRef<Operation *> ops : groups) {
      // A group of splits and concatenations alone computes nothing: its
      // pieces stay views of the tensor they come from (LSTMP's projection
      // and carried product, columns of one matmul's result, are yielded as
      // states). As a kernel of copies it lowered to one copy per piece,
      // nine kernels a step where the yield copies two.
      if (llvm::all_of(ops, [](Operation *op) {
            return isa<SplitOp, ConcatOp, ConstantOp>(op);
          }))
        continue;
      GroupBuilder builder(cell, ops);
      if (failed(builder.prepare()))
        continue;
      builder.commit();
      ++numGroups;
      numOpsFused += ops.size();
      changed = true;
    }
    mergeUnfusedSplits(block);
    if (changed)
      passArgumentsThroughGroups(cell);
    if (!changed)
      return;
    // Groups were created at the end of the body; order the body again.
    sortTopologically(&block, block.without_terminator());
    // Inlined scalars that no group or other op reads any more.
    eraseDeadOps(block, isInlined);
  }
};

} // namespace
