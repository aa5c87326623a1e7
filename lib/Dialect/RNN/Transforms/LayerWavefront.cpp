//===- LayerWavefront.cpp - A stack of scans over chunks of time ----------===//
//
// A stack of L layers runs layer after layer: each scan is T dependent
// steps, and each step of a layer at a batch of 64 keeps a fraction of the
// GPU busy (bound by latency, not by throughput). Layer l+1 needs only the
// rows of layer l's output up to its own step, so with the sequence cut into
// chunks, layer l+1 can run chunk k while layer l runs chunk k+1: L chunks
// run at once, and the stack takes about (T + (L-1)·C) steps' time instead
// of L·T when the GPU has room for the layers side by side.
//
// This pass builds the chunk loop; which stream each layer's chunk runs on
// is convert-lanes-to-runtime-calls' business, from the `rnn.lane` marks.
//
//===----------------------------------------------------------------------===//

#include "InputSequence.h"

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace rnn {
#define GEN_PASS_DEF_LAYERWAVEFRONT
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn;

namespace {

constexpr llvm::StringLiteral kLaneBegin = "rnn_cuda_lane_begin";
/// The lanes the runtime has (StreamLanes.h).
constexpr size_t kMaxLanes = 16;

/// One layer of a chain: its scan and the ops that compute its inputs from
/// the previous layer's output sequences (none for the first layer), in
/// block order.
struct Layer {
  ScanOp scan;
  SmallVector<Operation *> links;
  /// Sequences from before the chain that the links or the scan read
  /// besides the previous layer's outputs.
  SmallVector<Value> sources;
};

/// Whether every product left in `scan`'s cell (the recurrent ones, once
/// the input projections are hoisted; at least one) reads bf16 or f16 rows,
/// and its state is [B, H] with H in [minHidden, maxHidden] (maxHidden 0: no
/// upper bound). H is the first state's width: a derived backward's product
/// reads the gate gradients, G·H wide.
bool multipliesSixteenBitRows(ScanOp scan, int64_t minHidden,
                              int64_t maxHidden) {
  auto cell =
      SymbolTable::lookupNearestSymbolFrom<CellOp>(scan, scan.getCellAttr());
  if (!cell || scan.getInit().empty())
    return false;
  auto state = dyn_cast<ShapedType>(scan.getInit().front().getType());
  if (!state || !state.hasRank() || state.getRank() < 1)
    return false;
  int64_t hidden = state.getShape().back();
  if (ShapedType::isDynamic(hidden) || hidden < minHidden ||
      (maxHidden != 0 && hidden > maxHidden))
    return false;
  bool any = false, all = true;
  cell.walk([&](MatmulOp matmul) {
    any = true;
    Type element = getElementTypeOrSelf(matmul.getLhs().getType());
    all &= element.isBF16() || element.isF16();
  });
  return any && all;
}

/// Whether `scan` can run chunk by chunk: forward, every row the full
/// length, sequences [T, B, N] with a static N, and final states of the
/// types of its initial ones (a chunk's final states start the next).
bool isChunkable(ScanOp scan) {
  if (scan.getLengths() || scan.getInputs().empty() ||
      scan.getOutputs().empty())
    return false;
  auto isSequence = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.getRank() == 3 && !tensor.isDynamicDim(2);
  };
  if (!llvm::all_of(scan.getInputs().getTypes(), isSequence) ||
      !llvm::all_of(scan.getOutputs().getTypes(), isSequence))
    return false;
  return llvm::equal(scan.getInit().getTypes(),
                     scan.getFinalStates().getTypes());
}

/// Whether `value` is available where the chain's loop goes (before
/// `first`, the chain's first scan).
bool availableBefore(Value value, Operation *first, DominanceInfo &dominance) {
  return dominance.properlyDominates(value, first);
}

/// Makes `value` available before `first` if it is computed after it by
/// pure ops in its block from values available there (a layer's initial
/// state cast to bf16 next to its scan): those ops move before `first`,
/// which changes nothing they compute. Returns whether it is available.
bool makeAvailableBefore(Value value, Operation *first,
                         DominanceInfo &dominance) {
  if (availableBefore(value, first, dominance))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != first->getBlock() || !isPure(def) ||
      def->getNumRegions() != 0)
    return false;
  for (Value operand : def->getOperands())
    if (!makeAvailableBefore(operand, first, dominance))
      return false;
  def->moveBefore(first);
  return true;
}

/// The operands of the row-wise `op` that are sequences ([T, B, N]), which
/// a chunk slices: a product's left operand (and accumulator), any rank-3
/// operand of the element-wise ops. A weight is never sliced, whatever its
/// rank (a head-wise product's [NH, G N, N]).
SmallVector<Value> sequenceOperands(Operation *op) {
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    SmallVector<Value> operands{matmul.getLhs()};
    if (Value acc = matmul.getAcc())
      operands.push_back(acc);
    return operands;
  }
  if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op))
    return {headwise.getLhs()};
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    if (auto tensor = dyn_cast<RankedTensorType>(operand.getType());
        tensor && tensor.getRank() == 3)
      operands.push_back(operand);
  return operands;
}

/// Whether `value` is computed, through ops of `block`, from a scan's
/// results.
bool computedByScan(Value value, Block *block) {
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Operation *> seen;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != block || !seen.insert(def).second)
      continue;
    if (isa<ScanOp>(def))
      return true;
    llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

/// How a layer of a chain reads the one before: the ops between `previous`
/// and `next` (a later scan in the same block) that compute `next`'s inputs
/// row by row over the sequence from `previous`'s output sequences, and the
/// other sequences they (or `next`) read, computed before `first` (a
/// backward's saved gates, a residual input); the loop slices both. Fails
/// when an input depends on anything else.
FailureOr<std::pair<SmallVector<Operation *>, SmallVector<Value>>>
linkOps(ScanOp previous, ScanOp next, Operation *first,
        DominanceInfo &dominance) {
  llvm::SetVector<Operation *> slice;
  llvm::SetVector<Value> sources;
  SmallVector<Value> worklist(next.getInputs().begin(), next.getInputs().end());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (value.getDefiningOp() == previous.getOperation()) {
      if (!llvm::is_contained(previous.getOutputs(), value))
        return failure(); // A final state is no sequence.
      continue;
    }
    Operation *def = value.getDefiningOp();
    bool between = def && def->getBlock() == next->getBlock() &&
                   previous->isBeforeInBlock(def);
    if (!between) {
      // Not another scan's output: the scans that could run beside the
      // chain (the other direction of a bidirectional stack) do so
      // instead.
      if (computedByScan(value, next->getBlock()) ||
          !makeAvailableBefore(value, first, dominance))
        return failure();
      sources.insert(value);
      continue;
    }
    if (!isPure(def) || !isRankPolymorphic(def) || def->getNumResults() != 1)
      return failure();
    if (!slice.insert(def))
      continue;
    SmallVector<Value> sequences = sequenceOperands(def);
    llvm::append_range(worklist, sequences);
    // The rest broadcast over the sequence (biases, weights, scalars); they
    // must exist before the loop.
    for (Value operand : def->getOperands())
      if (!llvm::is_contained(sequences, operand) &&
          !makeAvailableBefore(operand, first, dominance))
        return failure();
  }
  SmallVector<Operation *> ops(slice.begin(), slice.end());
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return std::make_pair(ops,
                        SmallVector<Value>(sources.begin(), sources.end()));
}

/// The ops before `first` (a chain's first scan) that compute its inputs
/// row by row from sequences computed before them (layer 0's hoisted input
/// projection), and those sequences: the loop computes the ops on each
/// chunk's rows of the sequences.
std::pair<SmallVector<Operation *>, SmallVector<Value>>
firstLayerLinks(ScanOp first) {
  llvm::SetVector<Operation *> slice;
  llvm::SetVector<Value> sources;
  SmallVector<Value> worklist(first.getInputs().begin(),
                              first.getInputs().end());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != first->getBlock() || !isPure(def) ||
        !isRankPolymorphic(def) || def->getNumResults() != 1) {
      sources.insert(value);
      continue;
    }
    if (!slice.insert(def))
      continue;
    llvm::append_range(worklist, sequenceOperands(def));
  }
  SmallVector<Operation *> ops(slice.begin(), slice.end());
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return {ops, SmallVector<Value>(sources.begin(), sources.end())};
}

/// The chains of at least two scans in `block`, each scan in one chain.
SmallVector<SmallVector<Layer>> findChains(Block &block,
                                           DominanceInfo &dominance) {
  SmallVector<SmallVector<Layer>> chains;
  llvm::DenseSet<Operation *> taken;
  SmallVector<ScanOp> scans(block.getOps<ScanOp>());
  for (unsigned index = 0; index < scans.size(); ++index) {
    ScanOp start = scans[index];
    if (taken.contains(start) || !isChunkable(start))
      continue;
    SmallVector<Layer> chain{{start, {}}};
    bool operandsReady = llvm::all_of(
        llvm::concat<Value>(start.getInit(), start.getParams()),
        [&](Value v) { return availableBefore(v, start, dominance); });
    if (!operandsReady)
      continue;
    for (ScanOp next : ArrayRef<ScanOp>(scans).drop_front(index + 1)) {
      // A lane per layer, and the runtime has 16: a deeper stack is
      // several chains, one after the other.
      if (chain.size() == kMaxLanes)
        break;
      if (taken.contains(next) || !isChunkable(next) ||
          next.getReverse() != start.getReverse())
        continue;
      ScanOp previous = chain.back().scan;
      // A scan that reads nothing computed after the previous one (the
      // other direction of a bidirectional layer) is no next layer.
      bool readsPrevious = llvm::any_of(next.getInputs(), [&](Value input) {
        Operation *def = input.getDefiningOp();
        if (def == previous.getOperation())
          return true;
        return def && def->getBlock() == &block &&
               previous->isBeforeInBlock(def);
      });
      if (!readsPrevious)
        continue;
      bool ready = llvm::all_of(
          llvm::concat<Value>(next.getInit(), next.getParams()),
          [&](Value v) { return makeAvailableBefore(v, start, dominance); });
      auto links = linkOps(previous, next, start, dominance);
      if (!ready || failed(links))
        break;
      chain.push_back(
          {next, std::move(links->first), std::move(links->second)});
    }
    if (chain.size() < 2)
      continue;
    for (Layer &layer : chain)
      taken.insert(layer.scan);
    chains.push_back(std::move(chain));
  }
  return chains;
}

/// The ops of `firstLayerLinks(scan)` that only `scan` and each other use
/// (its own input projection), and the values they read from outside:
/// what several lanes read (the concatenation of a bidirectional layer's
/// outputs) is computed once, before the lanes.
std::pair<SmallVector<Operation *>, SmallVector<Value>> laneLinks(ScanOp scan) {
  SmallVector<Operation *> links = firstLayerLinks(scan).first;
  bool changed = true;
  while (changed) {
    changed = false;
    llvm::DenseSet<Operation *> kept(links.begin(), links.end());
    kept.insert(scan);
    auto shared = [&](Operation *link) {
      return llvm::any_of(link->getUsers(), [&](Operation *user) {
        return !kept.contains(user);
      });
    };
    auto it = llvm::find_if(links, shared);
    if (it != links.end()) {
      links.erase(it);
      changed = true;
    }
  }
  llvm::SetVector<Value> reads;
  llvm::DenseSet<Operation *> inLane(links.begin(), links.end());
  SmallVector<Operation *> laneOps(links);
  laneOps.push_back(scan);
  for (Operation *op : laneOps)
    for (Value operand : op->getOperands())
      if (!inLane.contains(operand.getDefiningOp()))
        reads.insert(operand);
  return {links, SmallVector<Value>(reads.begin(), reads.end())};
}

/// Whether `op` (in `block`, after `start`) depends on any of `scans`
/// through ops of the block.
bool dependsOn(Operation *op, ArrayRef<ScanOp> scans, Operation *start) {
  SmallVector<Operation *> worklist{op};
  llvm::DenseSet<Operation *> seen;
  while (!worklist.empty()) {
    Operation *current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    for (Value operand : current->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != op->getBlock() ||
          def->isBeforeInBlock(start))
        continue;
      if (llvm::is_contained(scans, def))
        return true;
      worklist.push_back(def);
    }
  }
  return false;
}

/// Groups of at least two scans in `block` that read nothing of each other
/// (the forward and reverse scans of a bidirectional layer), consecutive
/// among the block's scans, at most 16: each can run in a lane of its own
/// with its input projection, once what else it reads is computed before
/// the first.
SmallVector<SmallVector<ScanOp>> findSideBySide(Block &block,
                                                DominanceInfo &dominance) {
  SmallVector<SmallVector<ScanOp>> groups;
  SmallVector<ScanOp> scans(block.getOps<ScanOp>());
  unsigned index = 0;
  while (index < scans.size()) {
    SmallVector<ScanOp> group{scans[index]};
    ScanOp start = scans[index];
    for (++index; index < scans.size() && group.size() < kMaxLanes; ++index) {
      ScanOp next = scans[index];
      if (dependsOn(next, group, start))
        break;
      // What the scan and its projection read must be there before the
      // group (weights, the input sequence, initial states).
      SmallVector<Value> reads = laneLinks(next).second;
      bool ready = llvm::all_of(reads, [&](Value v) {
        return makeAvailableBefore(v, start, dominance);
      });
      if (!ready)
        break;
      group.push_back(next);
    }
    if (group.size() >= 2)
      groups.push_back(std::move(group));
  }
  return groups;
}

/// `type` ([T, B, N]) with a dynamic time axis.
RankedTensorType withDynamicTime(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape.front() = ShapedType::kDynamic;
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// The offsets, sizes and strides of rows [start, start + count) of a
/// sequence of `type` ([T, B, N]). The sizes come from outside the chunk's
/// scan (`batch`, not the chunk's own size), so that eliminate-empty-tensors
/// can make the scan write its output where the slice goes.
struct TimeWindow {
  TimeWindow(OpBuilder &b, Type type, Value start, Value count, Value batch)
      : offsets{start, b.getIndexAttr(0), b.getIndexAttr(0)},
        sizes{count, batch,
              b.getIndexAttr(cast<RankedTensorType>(type).getDimSize(2))},
        strides(3, b.getIndexAttr(1)) {
    // A static batch stays static: the slice's type says so.
    auto tensor = cast<RankedTensorType>(type);
    if (!tensor.isDynamicDim(1))
      sizes[1] = b.getIndexAttr(tensor.getDimSize(1));
  }
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// Rows [start, start + count) of the sequence `value`.
Value timeSlice(OpBuilder &b, Location loc, Value value, Value start,
                Value count, Value batch) {
  TimeWindow window(b, value.getType(), start, count, batch);
  return tensor::ExtractSliceOp::create(
      b, loc, withDynamicTime(value.getType()), value, window.offsets,
      window.sizes, window.strides);
}

/// `chunk` written into rows [start, start + count) of `sequence`.
Value insertTimeSlice(OpBuilder &b, Location loc, Value chunk, Value sequence,
                      Value start, Value count, Value batch) {
  TimeWindow window(b, sequence.getType(), start, count, batch);
  return tensor::InsertSliceOp::create(b, loc, chunk, sequence, window.offsets,
                                       window.sizes, window.strides);
}

/// ceil(sqrt(3 T)) steps, at least 1. A chunk of C steps costs each layer
/// a fixed o (its input projection's launch, the lane's switch, the first
/// step's launch in stream order) and the wavefront fills in (L - 1) C
/// steps of s each: o T / C + (L - 1) C s, least at C ~ sqrt(T o / s) for
/// a deep stack. On the H100 (bench/wavefront.py, B = 64, H = 1024,
/// T = 100) o / s came out near 3: chunks of 16 beat 8 and 4 at 4 and 8
/// layers.
Value automaticChunk(OpBuilder &b, Location loc, Value steps) {
  Type f64 = b.getF64Type();
  Value t = arith::UIToFPOp::create(
      b, loc, f64, arith::IndexCastUIOp::create(b, loc, b.getI64Type(), steps));
  Value scaled = arith::MulFOp::create(
      b, loc, t, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(3.0)));
  Value root =
      math::CeilOp::create(b, loc, math::SqrtOp::create(b, loc, scaled));
  Value chunk = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      arith::FPToUIOp::create(b, loc, b.getI64Type(), root));
  return arith::MaxUIOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 1), chunk);
}

/// A lane: an `scf.execute_region` (no_inline) of `types` whose block starts
/// with its mark, `rnn_cuda_lane_begin(lane, after)`, which survives every
/// rewrite up to convert-lanes-to-runtime-calls (an attribute would not
/// survive bufferization). `body` is set to build the rest of the block.
scf::ExecuteRegionOp createLane(OpBuilder &b, Location loc, TypeRange types,
                                func::FuncOp laneBegin, int64_t lane,
                                int64_t after, OpBuilder &body) {
  auto region = scf::ExecuteRegionOp::create(b, loc, types);
  region.setNoInline(true);
  auto *block = new Block();
  region.getRegion().push_back(block);
  body.setInsertionPointToEnd(block);
  Type i64 = body.getI64Type();
  func::CallOp::create(
      body, loc, laneBegin,
      ValueRange{arith::ConstantIntOp::create(body, loc, i64, lane),
                 arith::ConstantIntOp::create(body, loc, i64, after)});
  return region;
}

struct LayerWavefrontPass
    : public rnn::impl::LayerWavefrontBase<LayerWavefrontPass> {
  using LayerWavefrontBase::LayerWavefrontBase;

  /// `func.func private @rnn_cuda_lane_begin(i64, i64)`, added once.
  func::FuncOp laneBeginDeclaration() {
    ModuleOp module = getOperation();
    if (auto existing = module.lookupSymbol<func::FuncOp>(kLaneBegin))
      return existing;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Type i64 = b.getI64Type();
    auto func = func::FuncOp::create(b, module.getLoc(), kLaneBegin,
                                     b.getFunctionType({i64, i64}, {}));
    func.setPrivate();
    return func;
  }

  /// What `find(block, dominance)` finds in every function's body, found
  /// before anything is rewritten.
  template <typename Find> auto inFunctionBodies(Find find) {
    decltype(find(std::declval<Block &>(),
                  std::declval<DominanceInfo &>())) found;
    getOperation().walk([&](func::FuncOp func) {
      DominanceInfo dominance(func);
      for (Block &block : func.getBody())
        llvm::append_range(found, find(block, dominance));
    });
    return found;
  }

  /// `chunk`, or at least persistentMinSteps where the batch is at most
  /// persistentMaxBatch rows and `steps` at least twice persistentMinSteps
  /// (fewer steps would leave one chunk, and no wavefront).
  Value atLeastPersistentSteps(OpBuilder &b, Location loc, Value chunk,
                               Value steps, Value batch) {
    Value minimum = arith::ConstantIndexOp::create(b, loc, persistentMinSteps);
    Value fitsOneTile = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ule, batch,
        arith::ConstantIndexOp::create(b, loc, persistentMaxBatch));
    Value longEnough = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::uge, steps,
        arith::ConstantIndexOp::create(b, loc, 2 * persistentMinSteps));
    Value both = arith::AndIOp::create(b, loc, fitsOneTile, longEnough);
    Value raised = arith::MaxUIOp::create(b, loc, chunk, minimum);
    return arith::SelectOp::create(b, loc, both, raised, chunk);
  }

  void runOnOperation() override {
    if (persistentMinSteps < 0 || persistentMaxBatch < 0 ||
        persistentMinHidden < 0 || persistentMaxHidden < 0) {
      mlir::emitError(getOperation().getLoc(),
                      "rnn-layer-wavefront: persistent-min-steps, "
                      "persistent-max-batch, persistent-min-hidden and "
                      "persistent-max-hidden must not be negative, not ")
          << int64_t(persistentMinSteps) << ", " << int64_t(persistentMaxBatch)
          << ", " << int64_t(persistentMinHidden) << " and "
          << int64_t(persistentMaxHidden);
      return signalPassFailure();
    }
    if (chunkSteps < 0) {
      mlir::emitError(getOperation().getLoc(),
                      "rnn-layer-wavefront: chunk-steps must be 0 (automatic) "
                      "or positive, not ")
          << int64_t(chunkSteps);
      return signalPassFailure();
    }
    for (SmallVector<Layer> &chain : inFunctionBodies(findChains)) {
      rewriteChain(chain);
      ++numChains;
      numLayers += chain.size();
    }
    // Then the scans that read nothing of each other (the two directions
    // of a bidirectional layer), among those no chain took.
    for (SmallVector<ScanOp> &group : inFunctionBodies(findSideBySide)) {
      rewriteSideBySide(group);
      ++numSideBySide;
    }
  }

  /// Lanes of one group for `scans`, which read nothing of each other: each
  /// scan, with the row-wise ops before it that compute its inputs (its
  /// input projection), in a lane of its own that waits for no other.
  void rewriteSideBySide(ArrayRef<ScanOp> scans) {
    func::FuncOp laneBegin = laneBeginDeclaration();
    ScanOp first = scans.front();
    Location loc = first.getLoc();
    OpBuilder b(first);
    SmallVector<Type> types;
    for (ScanOp scan : scans)
      llvm::append_range(types, scan->getResultTypes());
    auto group = scf::ExecuteRegionOp::create(b, loc, types);
    group.setNoInline(true);
    auto *groupBody = new Block();
    group.getRegion().push_back(groupBody);
    OpBuilder gb = OpBuilder::atBlockEnd(groupBody);
    SmallVector<Value> results;
    SmallVector<SmallVector<Operation *>> allLinks;
    for (auto [index, scan] : llvm::enumerate(scans)) {
      OpBuilder rb(gb.getContext());
      auto lane = createLane(gb, loc, scan->getResultTypes(), laneBegin, index,
                             /*after=*/-1, rb);
      IRMapping mapping;
      SmallVector<Operation *> links = laneLinks(scan).first;
      for (Operation *link : links)
        rb.clone(*link, mapping);
      Operation *clone = rb.clone(*scan, mapping);
      scf::YieldOp::create(rb, loc, clone->getResults());
      llvm::append_range(results, lane.getResults());
      allLinks.push_back(std::move(links));
    }
    scf::YieldOp::create(gb, loc, results);
    unsigned position = 0;
    for (ScanOp scan : scans) {
      unsigned count = scan->getNumResults();
      scan->replaceAllUsesWith(group.getResults().slice(position, count));
      position += count;
    }
    for (auto [scan, links] :
         llvm::zip(llvm::reverse(scans), llvm::reverse(allLinks))) {
      scan->erase();
      for (Operation *link : llvm::reverse(links))
        if (link->use_empty())
          link->erase();
    }
  }

  void rewriteChain(ArrayRef<Layer> chain) {
    func::FuncOp laneBegin = laneBeginDeclaration();
    ScanOp first = chain.front().scan;
    bool reverse = first.getReverse();
    Location loc = first.getLoc();
    OpBuilder b(first);
    auto firstLayer = firstLayerLinks(first);
    SmallVector<Operation *> firstLinks = std::move(firstLayer.first);
    SmallVector<Value> sources = std::move(firstLayer.second);
    // The sizes come from a sequence the loop slices, not from the links'
    // results (which would keep the whole-sequence links alive).
    Value input = sources.front();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value steps = tensor::DimOp::create(b, loc, input, 0);
    Value batch = tensor::DimOp::create(b, loc, input, 1);
    Value chunk =
        chunkSteps > 0
            ? Value(arith::ConstantIndexOp::create(b, loc, chunkSteps))
            : automaticChunk(b, loc, steps);
    std::string chunkRule = chunkSteps > 0
                                ? std::to_string(chunkSteps) + " time steps"
                                : std::string("ceil(sqrt(3 T)) time steps");
    if (chunkSteps == 0 && persistentMinSteps > 0 && persistentMaxBatch > 0 &&
        llvm::all_of(chain, [&](const Layer &layer) {
          return multipliesSixteenBitRows(layer.scan, persistentMinHidden,
                                          persistentMaxHidden);
        })) {
      chunk = atLeastPersistentSteps(b, loc, chunk, steps, batch);
      chunkRule += ", at least " + std::to_string(persistentMinSteps) +
                   " where B <= " + std::to_string(persistentMaxBatch) +
                   " and T >= " + std::to_string(2 * persistentMinSteps) +
                   " (16-bit products of the grid-wide persistent kernel's "
                   "sizes: each lane's full chunks then long enough for it)";
    }
    Value chunks = arith::CeilDivUIOp::create(b, loc, steps, chunk);

    // Carried: every layer's output sequences (written chunk by chunk),
    // then its states.
    SmallVector<Value> inits;
    for (Layer layer : chain) {
      for (Type type : layer.scan.getOutputs().getTypes()) {
        auto sequence = cast<RankedTensorType>(type);
        SmallVector<Value> dynamic;
        if (sequence.isDynamicDim(0))
          dynamic.push_back(steps);
        if (sequence.isDynamicDim(1))
          dynamic.push_back(batch);
        inits.push_back(tensor::EmptyOp::create(
            b, loc, sequence.getShape(), sequence.getElementType(), dynamic));
      }
      llvm::append_range(inits, layer.scan.getInit());
    }

    auto loop = scf::ForOp::create(
        b, loc, zero, chunks, one, inits,
        [&](OpBuilder &lb, Location loc, Value k, ValueRange carried) {
          // Chunk k: rows [k C, min((k + 1) C, T)); for reverse scans,
          // which run from the last row, rows [max(T - (k + 1) C, 0),
          // T - k C).
          Value done = arith::MulIOp::create(lb, loc, k, chunk);
          Value left = arith::SubIOp::create(lb, loc, steps, done);
          Value count = arith::MinUIOp::create(lb, loc, chunk, left);
          Value start = reverse
                            ? Value(arith::SubIOp::create(lb, loc, left, count))
                            : done;
          SmallVector<Value> yielded;
          SmallVector<Value> previousOutputs;
          unsigned position = 0;
          for (auto [index, layer] : llvm::enumerate(chain)) {
            ScanOp scan = layer.scan;
            unsigned numOutputs = scan.getOutputs().size();
            unsigned numStates = scan.getInit().size();
            ValueRange sequences = carried.slice(position, numOutputs);
            ValueRange states = carried.slice(position + numOutputs, numStates);
            position += numOutputs + numStates;

            SmallVector<Type> resultTypes(sequences.getTypes());
            llvm::append_range(resultTypes, states.getTypes());
            OpBuilder rb(lb.getContext());
            auto lane = createLane(lb, loc, resultTypes, laneBegin, index,
                                   int64_t(index) - 1, rb);

            // The chunk's input rows: of the sequence for the first layer,
            // else the link ops over the previous layer's chunk.
            IRMapping mapping;
            SmallVector<Value> chunkInputs;
            if (index == 0) {
              // Layer 0's links (its input projection) on the chunk's rows.
              for (Value source : sources)
                mapping.map(source,
                            timeSlice(rb, loc, source, start, count, batch));
              for (Operation *link : firstLinks) {
                Operation *clone = rb.clone(*link, mapping);
                clone->getResult(0).setType(
                    withDynamicTime(link->getResult(0).getType()));
              }
              for (Value in : scan.getInputs())
                chunkInputs.push_back(mapping.lookup(in));
            } else {
              ScanOp previous = chain[index - 1].scan;
              for (Value source : layer.sources)
                mapping.map(source,
                            timeSlice(rb, loc, source, start, count, batch));
              for (auto [output, full] :
                   llvm::zip(previous.getOutputs(), previousOutputs))
                mapping.map(output,
                            timeSlice(rb, loc, full, start, count, batch));
              for (Operation *link : layer.links) {
                Operation *clone = rb.clone(*link, mapping);
                clone->getResult(0).setType(
                    withDynamicTime(link->getResult(0).getType()));
              }
              for (Value in : scan.getInputs())
                chunkInputs.push_back(mapping.lookup(in));
            }
            SmallVector<Type> chunkOutputTypes;
            for (Type type : scan.getOutputs().getTypes())
              chunkOutputTypes.push_back(withDynamicTime(type));
            auto chunkScan = ScanOp::create(
                rb, loc, chunkOutputTypes, scan.getFinalStates().getTypes(),
                scan.getCellAttr(), chunkInputs, states, scan.getParams(),
                /*lengths=*/Value(), reverse ? lb.getUnitAttr() : UnitAttr());
            chunkScan->setDiscardableAttrs(
                scan->getDiscardableAttrDictionary());
            SmallVector<Value> laneResults;
            for (auto [out, full] :
                 llvm::zip(chunkScan.getOutputs(), sequences))
              laneResults.push_back(
                  insertTimeSlice(rb, loc, out, full, start, count, batch));
            llvm::append_range(laneResults, chunkScan.getFinalStates());
            scf::YieldOp::create(rb, loc, laneResults);

            previousOutputs.assign(lane.getResults().begin(),
                                   lane.getResults().begin() + numOutputs);
            llvm::append_range(yielded, lane.getResults());
          }
          scf::YieldOp::create(lb, loc, yielded);
        });
    loop->setAttr(kWavefrontChunkAttr, b.getStringAttr(chunkRule));

    unsigned position = 0;
    for (Layer layer : chain) {
      ScanOp scan = layer.scan;
      unsigned count = scan->getNumResults();
      scan->replaceAllUsesWith(loop.getResults().slice(position, count));
      position += count;
    }
    // The originals, last layer first (each link reads the layer before).
    for (const Layer &layer : llvm::reverse(chain)) {
      layer.scan->erase();
      for (Operation *link : llvm::reverse(layer.links))
        if (link->use_empty())
          link->erase();
    }
    for (Operation *link : llvm::reverse(firstLinks))
      if (link->use_empty())
        link->erase();
  }
};

} // namespace
