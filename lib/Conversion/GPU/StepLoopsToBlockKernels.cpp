//===- StepLoopsToBlockKernels.cpp - Small recurrences in one kernel ------===//
//
// A step of a small recurrence (H up to a few hundred, or a head-wise one
// with heads of that size) is a few thousand multiply-adds per batch row,
// and the per-step path spends about 2.3 us a step on the GEMM's and the
// fused kernel's launches whatever the work (docs/benchmarks.md, the shape
// sweep). Here each batch row of each head needs only its own head's N
// columns of h_{t-1}: one thread block can run the whole recurrence of a
// (head, row) pair with the head's weights in shared memory, and the blocks
// never wait for each other (no grid barrier, no residency requirement). A
// dense recurrence is the one-head case: each batch row is a block.
//
// The kernel: NH * B blocks of N threads (rounded up to whole warps); each
// copies its head's [G*N, N] matrix into shared memory ([G][K][N], so that
// the threads of a warp read consecutive units) and stages h_{t-1} of its
// row in shared memory (f32, double-buffered: one barrier a step). Thread n
// computes the G gate sums of unit n, then the cell's pointwise body
// (cloned from the group) for that element, keeping in registers the states
// that the group reads and rewrites, and the step's input-projection values
// loaded one step ahead. A cost model (a block's chain of dependent work,
// and how many blocks the multiprocessors hold at once, against the
// per-step path's launches) picks, per range of batch sizes, how many
// lanes split a unit's sums (up to three kernels, chosen at run time by
// B), and the largest batch for which a kernel runs; the step loop stays
// as the fallback for larger batches and empty sequences.
//
// A derived backward's step (the adjoint group, then the transposed product
// that gives the next state gradient) runs the same way in the other order
// (AdjointKernelBuilder): the group first, its gate gradients staged in
// shared memory, then each unit's sum over the head's G*N of them.
//
// On sm_90 a head whose weights fit in no block is shared by a cluster of
// 2 to 16 blocks, each holding a slice of its units and a whole copy of the
// staged vector. The blocks exchange what they stage through distributed
// shared memory: `st.async` stores into every block of the cluster, counted
// by the target's mbarrier of that half of the vector, on which its threads
// wait; no cluster-wide barrier a step.
//
//===----------------------------------------------------------------------===//

#include "StepRecurrence.h"

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace rnn {
#define GEN_PASS_DEF_CONVERTSTEPLOOPSTOBLOCKKERNELS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using rnn::StepRecurrence;

namespace {

/// Drops the scf.yield that the builders of an scf.for without iter_args
/// and of an scf.if without results put into a block, for a block whose
/// yield the kernel builders create themselves (a step with nothing live
/// across steps: a cell whose state is its product alone).
void dropImplicitYield(Block &block) {
  if (!block.empty() && isa<scf::YieldOp>(block.back()))
    block.back().erase();
}
void dropImplicitYields(scf::IfOp op) {
  dropImplicitYield(op.getThenRegion().front());
  dropImplicitYield(op.getElseRegion().front());
}

constexpr llvm::StringLiteral kPersistentEnabled =
    "rnn_cuda_persistent_enabled";
constexpr int64_t kWarp = 32;
/// The cost model's device: SMs of the H100 the kernel was measured on.
constexpr int64_t kMultiprocessors = 132;
/// A step of the step loop, in cycles: its GEMM's and its fused kernel's
/// launches take about 2.3 us at any small size (H100, docs/benchmarks.md).
constexpr int64_t kStepLoopCycles = 4000;
/// Inputs one lane sums at most before the units get more lanes.
constexpr int64_t kMaxSlice = 16;
/// What a step of a cluster costs beyond a block's: the stores into the
/// other blocks' shared memory and the wait for theirs. Fitted to the H100
/// (docs/persistent-recurrences.md, "Clusters"): the zoo's cells at H = 150
/// and 300 took 1.3k to 3k cycles a step more than the model of a block's
/// step predicts for one block (with a cluster barrier a step; the
/// mbarrier exchange is 1.07x to 1.29x faster, and the estimate stays).
constexpr int64_t kClusterStepCycles = 2000;
constexpr int64_t kRemoteStoreCycles = 40;
/// A cluster kernel's two mbarriers (one per half of the staged vector),
/// after the staged vector.
constexpr int64_t kBarrierBytes = 16;
/// Registers a lane may give to weights, and what it needs besides.
constexpr int64_t kWeightRegisters = 64;
constexpr int64_t kOtherRegisters = 40;

/// How the kernel runs a recurrence, and up to which batch. Each unit's
/// sums are split over `slices` adjacent lanes (S), lane s adding inputs
/// s*KS .. s*KS + KS - 1 (KS = `sliceSize`, K padded to S*KS with zero
/// weights), and combined by shuffles: more warps and shorter chains of
/// dependent multiply-adds than one lane per unit. A lane's G*KS weights
/// stay in registers where they fit, else in shared memory, several gates'
/// weights of an input in one word of up to 8 bytes (`wordBits`: one load).
struct BlockPlan {
  /// The blocks of a cluster that share a head (each holding `blockUnits`
  /// of its units and all of the staged vector), 1 for one block a head.
  int64_t clusterSize = 1;
  int64_t blockUnits = 0;
  int64_t slices = 1;
  int64_t sliceSize = 0;
  bool weightsInRegisters = false;
  int64_t gatesPerWord = 1;
  int64_t words = 1;
  int64_t wordBits = 64;
  int64_t threads = 0;
  int64_t weightBytes = 0;
  int64_t sharedBytes = 0;
  /// The cost model's cycles for a step of one block, and how many blocks
  /// a multiprocessor holds at once.
  int64_t stepCycles = 0;
  int64_t blocksPerSM = 1;
  /// The largest batch this plan runs (the plan before it in a
  /// BlockPlans runs the smaller ones).
  int64_t maxBatch = 0;
};

/// The plans of a recurrence, by batch: plans[i] runs batches above
/// plans[i-1].maxBatch up to plans[i].maxBatch, the step loop larger ones.
using BlockPlans = std::vector<BlockPlan>;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// The plan for blocks of `units` units whose `slices` lanes each sum
/// their share of `inputs` inputs for each of `gates` outputs
/// (`elementBytes` a weight); nothing when the weights fit neither in
/// registers nor in `sharedLimit` bytes.
std::optional<BlockPlan> planWithSlices(int64_t slices, int64_t units,
                                        int64_t inputs, int64_t gates,
                                        int64_t elementBytes,
                                        int64_t sharedLimit,
                                        int64_t extraBytes = 0) {
  BlockPlan plan;
  plan.slices = slices;
  plan.sliceSize = (inputs + plan.slices - 1) / plan.slices;
  plan.threads = roundUp(units * plan.slices, kWarp);
  int64_t weightRegisters = gates * plan.sliceSize;
  plan.weightsInRegisters =
      weightRegisters <= kWeightRegisters &&
      plan.threads * (weightRegisters + kOtherRegisters) <= 65536;
  int64_t padded = plan.slices * plan.sliceSize;
  // As many gates to a word as fit in 8 bytes (a power of two of them),
  // fewer where the padding of the last word would not fit.
  for (plan.gatesPerWord = 8 / elementBytes; plan.gatesPerWord >= 1;
       plan.gatesPerWord /= 2) {
    if (plan.gatesPerWord > 1 && plan.gatesPerWord / 2 >= gates)
      continue;
    plan.words = (gates + plan.gatesPerWord - 1) / plan.gatesPerWord;
    plan.wordBits = plan.gatesPerWord * elementBytes * 8;
    plan.weightBytes = plan.weightsInRegisters
                           ? 0
                           : plan.words * padded * units * plan.wordBits / 8;
    plan.sharedBytes =
        roundUp(plan.weightBytes, 16) + 2 * padded * 4 + extraBytes;
    if (plan.sharedBytes <= sharedLimit)
      break;
  }
  if (plan.gatesPerWord < 1)
    return std::nullopt;
  plan.weightBytes = roundUp(plan.weightBytes, 16);
  // A block's step: KS dependent multiply-adds per gate (a shared-memory
  // load each, two where the weights are there too), the shuffles, and
  // the barrier and pointwise body.
  int64_t log2Slices = llvm::Log2_64(plan.slices);
  plan.stepCycles = 300 +
                    4 * plan.sliceSize *
                        (gates + (plan.weightsInRegisters ? 0 : plan.words)) +
                    20 * gates * log2Slices;
  int64_t registers =
      plan.threads *
      ((plan.weightsInRegisters ? weightRegisters : 0) + kOtherRegisters);
  plan.blocksPerSM =
      std::max<int64_t>(1, std::min<int64_t>({32, 2048 / plan.threads,
                                              sharedLimit / plan.sharedBytes,
                                              65536 / registers}));
  return plan;
}

/// How many times the multiprocessors run `blocks` blocks of `plan` one
/// after the other.
int64_t wavesOf(const BlockPlan &plan, int64_t blocks) {
  int64_t resident = kMultiprocessors * plan.blocksPerSM;
  return (blocks + resident - 1) / resident;
}

/// The plans for heads of `units` units (`heads` blocks a batch row), each
/// the sum of `inputs` inputs for each of `gates` outputs, by batch. While
/// all the blocks fit on the multiprocessors at once, the most lanes a unit
/// (up to kMaxSlice inputs a lane): the shortest chain of dependent
/// multiply-adds, and a step no longer for more blocks. Past that, fewer
/// lanes a unit, smaller blocks that still fit at once (a second wave of
/// blocks doubles the step: the FlashRNN sLSTM's backward at 12 heads of
/// 64 units and B = 16 ran 192 blocks of 1024 threads in two waves, 4.9 us
/// a step on the H100, docs/performance-notes.md); past what any plan
/// holds at once, the plan with the shortest step times its waves, while
/// that beats the step loop's launches. Where a head needs a cluster, the
/// larger clusters' plans compete for the same batches (below). At most
/// kMaxPlans plans, each for one range of batches; none when no plan fits.
BlockPlans plansForShape(int64_t units, int64_t inputs, int64_t gates,
                         int64_t heads, int64_t elementBytes,
                         int64_t sharedLimit, int64_t maxClusterSize,
                         int64_t stagedPerUnit, int64_t stepLoopCycles) {
  constexpr size_t kMaxPlans = 3;
  // The plans of clusters of `cluster` blocks a head, most lanes first.
  auto candidatesFor = [&](int64_t cluster) {
    SmallVector<BlockPlan> candidates;
    int64_t blockUnits = (units + cluster - 1) / cluster;
    if (blockUnits > 1024)
      return candidates;
    for (int64_t slices = 1; slices <= kWarp && blockUnits * slices <= 1024;
         slices *= 2) {
      if (std::optional<BlockPlan> plan =
              planWithSlices(slices, blockUnits, inputs, gates, elementBytes,
                             sharedLimit, cluster > 1 ? kBarrierBytes : 0)) {
        plan->clusterSize = cluster;
        plan->blockUnits = blockUnits;
        if (cluster > 1)
          plan->stepCycles +=
              kClusterStepCycles + kRemoteStoreCycles * cluster * stagedPerUnit;
        candidates.insert(candidates.begin(), *plan);
      }
      if ((inputs + slices - 1) / slices <= kMaxSlice)
        break;
    }
    return candidates;
  };
  // A plan's identity among the candidates: its cluster and its lanes.
  auto idOf = [](const BlockPlan &plan) {
    return plan.clusterSize * 2 * kWarp + plan.slices;
  };
  // The plans `candidates` give, by batch, up to `batchLimit` rows.
  auto choose = [&](ArrayRef<BlockPlan> candidates, int64_t batchLimit) {
    BlockPlans plans;
    // Each plan serves one range of batches: once the choice has moved on
    // from a plan, it does not come back to it.
    llvm::SmallDenseSet<int64_t> retired;
    for (int64_t batch = 1; batch <= batchLimit; ++batch) {
      auto blocksOf = [&](const BlockPlan &plan) {
        return heads * batch * plan.clusterSize;
      };
      const BlockPlan *best = nullptr;
      for (const BlockPlan &plan : candidates)
        if (!retired.contains(idOf(plan)) &&
            wavesOf(plan, blocksOf(plan)) == 1) {
          best = &plan;
          break;
        }
      if (!best)
        for (const BlockPlan &plan : candidates)
          if (!retired.contains(idOf(plan)) &&
              (!best || wavesOf(plan, blocksOf(plan)) * plan.stepCycles <
                            wavesOf(*best, blocksOf(*best)) * best->stepCycles))
            best = &plan;
      // As many waves as fit in the step loop's time (one at least for a
      // block a head, whose step is always shorter; a cluster's must be).
      if (!best || wavesOf(*best, blocksOf(*best)) >
                       std::max<int64_t>(best->clusterSize > 1 ? 0 : 1,
                                         stepLoopCycles / best->stepCycles))
        break;
      if (plans.empty() || idOf(plans.back()) != idOf(*best)) {
        if (plans.size() == kMaxPlans)
          break;
        if (!plans.empty())
          retired.insert(idOf(plans.back()));
        plans.push_back(*best);
      }
      plans.back().maxBatch = batch;
    }
    return plans;
  };
  // The fewest blocks a head whose units' weights fit: a cluster barrier
  // costs more than a block's.
  SmallVector<BlockPlan> candidates;
  for (int64_t cluster = 1; cluster <= maxClusterSize && candidates.empty();
       cluster *= 2)
    candidates = candidatesFor(cluster);
  if (candidates.empty())
    return {};
  BlockPlans plans = choose(candidates, INT64_MAX);
  if (plans.empty() || candidates.front().clusterSize == 1)
    return plans;
  // Where a head needs a cluster, the larger clusters' plans compete too,
  // the size whose plan of most lanes the model finds shortest first, for
  // the batches the smallest cluster's plans take: a block of fewer units
  // gives each unit more lanes and packs more gates into a word. On the
  // H100 (bf16, 2026-11-27, docs/performance-notes.md) the GRU at H = 256,
  // B = 1, in clusters of 4 instead of 2: 1.79x the forward, 1.49x the
  // training step; the vanilla RNN at H = 384, B = 24 in clusters of 8: 1.83x.
  SmallVector<SmallVector<BlockPlan>> bySize = {candidates};
  for (int64_t size = 2 * candidates.front().clusterSize;
       size <= maxClusterSize; size *= 2)
    if (SmallVector<BlockPlan> larger = candidatesFor(size); !larger.empty())
      bySize.push_back(std::move(larger));
  llvm::stable_sort(bySize, [](const auto &a, const auto &b) {
    return a.front().stepCycles < b.front().stepCycles;
  });
  SmallVector<BlockPlan> all;
  for (const SmallVector<BlockPlan> &group : bySize)
    all.append(group.begin(), group.end());
  // Kept only where they cover every batch the smallest cluster's plans do
  // (at most kMaxPlans ranges between them).
  BlockPlans byCost = choose(all, plans.back().maxBatch);
  if (!byCost.empty() && byCost.back().maxBatch == plans.back().maxBatch)
    return byCost;
  return plans;
}

/// The step loop's step: a GEMM and a kernel, each launch about half of
/// kStepLoopCycles; a head-wise product is a batched GEMM per gate (G + 1
/// launches a step: the head-wise LSTM's step loop at H = 300, B = 16 took
/// 11.8 us a step against the dense LSTM's 7.2 on the H100,
/// docs/persistent-recurrences.md, "Clusters").
int64_t stepLoopCyclesOf(bool headwise, int64_t gates) {
  return headwise ? kStepLoopCycles * (gates + 1) / 2 : kStepLoopCycles;
}

/// The plans for `r`: a unit's G gate sums over the head's N inputs.
BlockPlans plansFor(const StepRecurrence &r, int64_t sharedLimit,
                    int64_t maxClusterSize) {
  return plansForShape(r.headSize, r.headSize, r.gates, r.heads,
                       r.weightElementType().getIntOrFloatBitWidth() / 8,
                       sharedLimit, maxClusterSize, /*stagedPerUnit=*/1,
                       stepLoopCyclesOf(r.headwise, r.gates));
}

/// The plans for an adjoint `r`: a unit's one sum over the head's G*N gate
/// gradients.
BlockPlans plansFor(const rnn::AdjointRecurrence &r, int64_t sharedLimit,
                    int64_t maxClusterSize) {
  return plansForShape(r.headSize, r.gates * r.headSize, 1, r.heads,
                       r.weightElementType().getIntOrFloatBitWidth() / 8,
                       sharedLimit, maxClusterSize, /*stagedPerUnit=*/r.gates,
                       stepLoopCyclesOf(r.headwise, r.gates));
}

/// How each of the group's inputs reaches the cloned body.
enum class InputKind {
  Unused,
  /// A gate window of the product (plus the projection under it when the
  /// product accumulates, which is prefetched).
  Gate,
  /// The backward's state gradient: a register of the kernel's.
  State,
  /// Read and rewritten by the group at the thread's element: kept in a
  /// register across steps.
  Carried,
  /// Changes with the step and nothing in the loop writes it: loaded one
  /// step ahead.
  Prefetched,
  /// The same every step and never written: loaded once.
  Invariant,
  /// Anything else (a row the last step wrote): loaded when used.
  Loaded,
};

/// What the forward's and the backward's block kernels share: the lanes of
/// a block (a unit's `slices` adjacent lanes), the block's head and batch
/// row, the staged vector in shared memory (f32, double-buffered, input k
/// of a lane's slice at k*S + s), and the group's operands read through
/// the views of a step.
class KernelBuilderBase {
protected:
  KernelBuilderBase(const BlockPlan &plan, OpBuilder &b, Location loc,
                    scf::ForOp loop, linalg::GenericOp pw)
      : plan(plan), b(b), loc(loc), loop(loop), pw(pw) {}

  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value zero() {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(0.0f));
  }
  Value toF32(Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  SmallVector<Value> indices(AffineMap map, Value row, Value column) {
    if (rnn::isIdentity2D(map))
      return {row, column};
    return {column};
  }
  /// The operand's value at (row, column), read through its view for the
  /// step `views` maps the loop's index to.
  Value load(OpOperand &operand, const IRMapping &views, Value row,
             Value column) {
    return memref::LoadOp::create(
        b, loc, views.lookupOrDefault(operand.get()),
        indices(pw.getMatchingIndexingMap(&operand), row, column));
  }
  /// `base` and the step-dependent views and indices the group needs, for
  /// step `step`.
  IRMapping viewsFor(Value step, const IRMapping &base) {
    IRMapping views = base;
    views.map(loop.getInductionVar(), step);
    for (Operation &op : loop.getBody()->without_terminator())
      if (needed.contains(&op) && rnn::dependsOnStep(op.getResult(0), loop))
        b.clone(op, views);
    return views;
  }
  /// The lanes' indices for `heads` heads of `units` units, the dynamic
  /// shared memory and the staged vector (after the weights' bytes).
  void setUp(gpu::LaunchOp launch, int64_t heads, int64_t units) {
    MLIRContext *ctx = b.getContext();
    thread = launch.getThreadIds().x;
    Value block = launch.getBlockIds().x;
    // The blocks of a cluster are consecutive: block rank r of a head's
    // cluster holds its units r*BU .. r*BU + BU - 1.
    if (plan.clusterSize > 1) {
      rank = arith::RemUIOp::create(b, loc, block, constant(plan.clusterSize));
      block = arith::DivUIOp::create(b, loc, block, constant(plan.clusterSize));
    }
    head = arith::RemUIOp::create(b, loc, block, constant(heads));
    row = arith::DivUIOp::create(b, loc, block, constant(heads));
    Value headColumn = arith::MulIOp::create(b, loc, head, constant(units));
    // Lane `thread` adds slice s of unit n's inputs.
    unit = arith::DivUIOp::create(b, loc, thread, constant(plan.slices));
    slice = arith::RemUIOp::create(b, loc, thread, constant(plan.slices));
    active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, thread,
                                   constant(plan.blockUnits * plan.slices));
    if (plan.clusterSize > 1) {
      unit = unitOf(unit);
      active = arith::AndIOp::create(
          b, loc, active,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, unit,
                                constant(units)));
    }

    first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slice,
                                  constant(0));
    // Lanes beyond the last unit compute with the last unit's addresses
    // (every lane takes part in the shuffles) and store nothing.
    column = arith::AddIOp::create(
        b, loc, headColumn,
        arith::MinUIOp::create(b, loc, unit, constant(units - 1)));
    workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    shared = gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                        MemRefLayoutAttrInterface{}, workgroup));
    staged = memref::ViewOp::create(
        b, loc,
        MemRefType::get({2, plan.slices * plan.sliceSize}, b.getF32Type(),
                        MemRefLayoutAttrInterface{}, workgroup),
        shared, constant(plan.weightBytes), ValueRange{});
    if (plan.clusterSize > 1) {
      stagedAddress = arith::IndexCastOp::create(
          b, loc, b.getI64Type(),
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, staged));
      barrierAddress = arith::AddIOp::create(
          b, loc, stagedAddress,
          arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                       2 * plan.slices * plan.sliceSize * 4));
    }
  }
  /// The local shared-memory pointer `offset` (i64 bytes) past `base`.
  Value sharedPointer(Value base, Value offset) {
    Value address = arith::AddIOp::create(b, loc, base, offset);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
  }
  /// The mbarrier of the staged vector's half `half` (index).
  Value barrierOf(Value half) {
    return sharedPointer(barrierAddress,
                         arith::IndexCastOp::create(
                             b, loc, b.getI64Type(),
                             arith::MulIOp::create(b, loc, half, constant(8))));
  }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  /// Runs `body` on the block's thread 0 where `condition` (or always).
  void onThreadZero(function_ref<void()> body, Value condition = {}) {
    Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         thread, constant(0));
    if (condition)
      isZero = arith::AndIOp::create(b, loc, isZero, condition);
    auto only = scf::IfOp::create(b, loc, isZero, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&only.getThenRegion().front());
    body();
  }
  /// A cluster kernel's exchange, where the blocks never wait for each
  /// other at a barrier: each half of the staged vector has an mbarrier of
  /// one arrival (thread 0's, which also expects the half's bytes), and the
  /// blocks' `st.async` stores complete its transactions, so that its phase
  /// completes when the whole vector has arrived. Initialised before the
  /// cluster barrier that precedes the first step.
  void initBarriers() {
    onThreadZero([&] {
      for (int64_t half = 0; half < 2; ++half)
        NVVM::MBarrierInitOp::create(b, loc, barrierOf(constant(half)), i32(1),
                                     Value());
      NVVM::FenceMbarrierInitOp::create(b, loc);
    });
  }
  /// Thread 0 expects `bytes` into half `half` (where `condition`).
  void expectStaged(Value half, int64_t bytes, Value condition = {}) {
    onThreadZero(
        [&] {
          NVVM::MBarrierArriveExpectTxOp::create(
              b, loc, Type(), barrierOf(half), i32(bytes),
              NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
        },
        condition);
  }
  /// Every thread waits until half `half` has arrived (its mbarrier's phase
  /// of parity `parity`, an index of 0 or 1).
  void waitStaged(Value half, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(
        b, loc, barrierOf(half),
        arith::IndexCastOp::create(b, loc, b.getI32Type(), parity), i32(0));
  }
  /// Where the block's unit `blockUnit`'s input k lives in the lanes'
  /// layout: its lane (unit-major, s = k / KS) and the slot j = k % KS.
  std::pair<Value, Value> laneAndSlot(Value blockUnit, Value k) {
    Value lane = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, blockUnit, constant(plan.slices)),
        arith::DivUIOp::create(b, loc, k, constant(plan.sliceSize)));
    return {lane, arith::RemUIOp::create(b, loc, k, constant(plan.sliceSize))};
  }
  /// The head's unit that the block's unit `blockUnit` is.
  Value unitOf(Value blockUnit) {
    if (!rank)
      return blockUnit;
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, rank, constant(plan.blockUnits)),
        blockUnit);
  }
  /// Stores `value` (f32) at (`half`, `position`) of the staged vector of
  /// every block of the cluster (distributed shared memory), this block's
  /// own included.
  void stage(Value half, Value position, Value value) {
    if (plan.clusterSize == 1) {
      memref::StoreOp::create(b, loc, value, staged,
                              ValueRange{half, position});
      return;
    }
    Value element = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, half,
                              constant(plan.slices * plan.sliceSize)),
        position);
    Value offset = arith::IndexCastOp::create(
        b, loc, b.getI64Type(),
        arith::MulIOp::create(b, loc, element, constant(4)));
    Value local = sharedPointer(stagedAddress, offset);
    Value localBarrier = barrierOf(half);
    auto clusterPointer = LLVM::LLVMPointerType::get(b.getContext(), 7);
    Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), value);
    for (int64_t target = 0; target < plan.clusterSize; ++target) {
      Value rankValue = i32(target);
      Value remote =
          NVVM::MapaOp::create(b, loc, clusterPointer, local, rankValue);
      Value remoteBarrier =
          NVVM::MapaOp::create(b, loc, clusterPointer, localBarrier, rankValue);
      // No NVVM op for st.async: the store, its bytes counted by the target
      // block's mbarrier of this half.
      LLVM::InlineAsmOp::create(
          b, loc, TypeRange{},
          ValueRange{
              LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), remote), bits,
              LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), remoteBarrier)},
          "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [$0], $1, "
          "[$2];",
          "l,r,l", /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          /*asm_dialect=*/LLVM::AsmDialectAttr(),
          /*operand_attrs=*/ArrayAttr());
    }
  }
  /// The barrier before the first step: the block's, or the cluster's
  /// where the blocks write into each other's staged vectors (each has
  /// zeroed its own and initialised its mbarriers before any writes).
  void startBarrier() {
    if (plan.clusterSize == 1) {
      gpu::BarrierOp::create(b, loc);
      return;
    }
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }
  /// Where input k of the staged vector lives: the lanes of a warp read S
  /// consecutive words.
  Value stagedIndex(Value k) {
    return arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, arith::RemUIOp::create(b, loc, k, constant(plan.sliceSize)),
            constant(plan.slices)),
        arith::DivUIOp::create(b, loc, k, constant(plan.sliceSize)));
  }
  /// Both halves of the staged vector zero (the padding stays so).
  void zeroStaged() {
    int64_t padded = plan.slices * plan.sliceSize;
    auto zeroFill = scf::ForOp::create(b, loc, thread, constant(2 * padded),
                                       constant(plan.threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(zeroFill.getBody());
    Value i = zeroFill.getInductionVar();
    memref::StoreOp::create(
        b, loc, zero(), staged,
        ValueRange{arith::DivUIOp::create(b, loc, i, constant(padded)),
                   arith::RemUIOp::create(b, loc, i, constant(padded))});
  }

  /// Classifies the group's inputs (`kinds`): `own` names those that are
  /// the kernel's (gate windows, the state gradient), and the rest are
  /// unused, carried, prefetched, invariant or loaded; then the inputs that
  /// live across steps (`liveInputs`, of `liveTypes`).
  void classifyInputs(function_ref<std::optional<InputKind>(OpOperand *)> own,
                      bool gatesPrefetched) {
    Block *body = pw.getBody();
    prefetchGates = gatesPrefetched;
    inits.assign(pw.getDpsInits().begin(), pw.getDpsInits().end());
    SmallVector<Value> writtenRoots;
    for (Value init : inits)
      writtenRoots.push_back(rnn::underlyingBuffer(init));
    for (OpOperand *input : pw.getDpsInputOperands()) {
      Value value = input->get();
      InputKind kind = InputKind::Loaded;
      if (body->getArgument(input->getOperandNumber()).use_empty())
        kind = InputKind::Unused;
      else if (std::optional<InputKind> special = own(input))
        kind = *special;
      else if (llvm::is_contained(inits, value) &&
               rnn::isIdentity2D(pw.getMatchingIndexingMap(input)))
        kind = InputKind::Carried;
      else if (!llvm::is_contained(writtenRoots, rnn::underlyingBuffer(value)))
        kind = rnn::dependsOnStep(value, loop) ? InputKind::Prefetched
                                               : InputKind::Invariant;
      kinds.push_back(kind);
    }
    for (auto [index, input] : llvm::enumerate(pw.getDpsInputOperands()))
      if (kinds[index] == InputKind::Carried || prefetched(index) ||
          kinds[index] == InputKind::Invariant) {
        liveInputs.push_back(index);
        liveTypes.push_back(
            body->getArgument(input->getOperandNumber()).getType());
      }
  }
  /// Whether input `index` is loaded one step ahead.
  bool prefetched(unsigned index) const {
    return kinds[index] == InputKind::Prefetched ||
           (kinds[index] == InputKind::Gate && prefetchGates);
  }
  /// The ops the group needs that do not change with the step, cloned
  /// before the step loop.
  IRMapping cloneOutside() {
    IRMapping outside;
    for (Operation &op : loop.getBody()->without_terminator())
      if (needed.contains(&op) && !rnn::dependsOnStep(op.getResult(0), loop))
        b.clone(op, outside);
    return outside;
  }
  /// The live inputs at the step `views` maps to; with `onlyPrefetched`,
  /// the prefetched ones alone (null for the others).
  SmallVector<Value> loadLive(const IRMapping &views, bool onlyPrefetched) {
    SmallVector<Value> values;
    for (unsigned index : liveInputs)
      values.push_back(
          !onlyPrefetched || prefetched(index)
              ? load(*pw.getDpsInputOperands()[index], views, row, column)
              : Value());
    return values;
  }
  /// The group's body cloned for the thread's element: each input mapped to
  /// `own`'s value (its kinds of classifyInputs), the live value `live`
  /// gives, or a load at `views`. Returns the mapping of the body's values.
  IRMapping cloneGroup(function_ref<Value(unsigned, OpOperand *)> own,
                       function_ref<Value(unsigned)> live,
                       const IRMapping &views) {
    Block *body = pw.getBody();
    IRMapping scalars;
    for (auto [index, input] : llvm::enumerate(pw.getDpsInputOperands())) {
      BlockArgument arg = body->getArgument(input->getOperandNumber());
      Value value;
      switch (kinds[index]) {
      case InputKind::Unused:
        continue;
      case InputKind::Gate:
      case InputKind::State:
        value = own(index, input);
        break;
      case InputKind::Carried:
      case InputKind::Prefetched:
      case InputKind::Invariant:
        value = live(index);
        break;
      case InputKind::Loaded:
        value = load(*input, views, row, column);
        break;
      }
      scalars.map(arg, value);
    }
    for (Operation &op : body->without_terminator())
      b.clone(op, scalars);
    return scalars;
  }
  /// The live values of the next step: the group's new carried states, the
  /// prefetched `nextLive`, the rest as they are.
  SmallVector<Value> nextCarried(ArrayRef<Value> nextLive,
                                 function_ref<Value(unsigned)> live,
                                 const IRMapping &scalars) {
    auto yield = cast<linalg::YieldOp>(pw.getBody()->getTerminator());
    SmallVector<Value> carried;
    for (auto [position, index] : llvm::enumerate(liveInputs)) {
      OpOperand &input = *pw.getDpsInputOperands()[index];
      if (prefetched(index)) {
        carried.push_back(nextLive[position]);
      } else if (kinds[index] == InputKind::Carried) {
        unsigned result = llvm::find(inits, input.get()) - inits.begin();
        carried.push_back(scalars.lookupOrDefault(yield.getOperand(result)));
      } else {
        carried.push_back(live(index));
      }
    }
    return carried;
  }
  /// The unit's first lane stores each result of the group (the body
  /// cloned into `scalars`) where the group writes it at the step `views`
  /// maps to, after `stage` has staged what the kernel keeps of it.
  void storeGroupResults(const IRMapping &scalars, const IRMapping &views,
                         function_ref<void(unsigned, Value)> stage) {
    auto yield = cast<linalg::YieldOp>(pw.getBody()->getTerminator());
    auto store = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inStore(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    for (auto [index, init] : llvm::enumerate(pw.getDpsInitsMutable())) {
      Value result = scalars.lookupOrDefault(yield.getOperand(index));
      stage(index, result);
      memref::StoreOp::create(
          b, loc, result, views.lookupOrDefault(init.get()),
          indices(pw.getMatchingIndexingMap(&init), row, column));
    }
  }
  /// Each of `sums` added up over the unit's lanes (xor shuffles): every
  /// lane ends with the unit's sums.
  void combineLanes(MutableArrayRef<Value> sums) {
    for (int64_t offset = plan.slices / 2; offset >= 1; offset /= 2)
      for (Value &sum : sums) {
        Value other = gpu::ShuffleOp::create(
                          b, loc, sum, static_cast<int32_t>(offset),
                          static_cast<int32_t>(kWarp), gpu::ShuffleMode::XOR)
                          .getShuffleResult();
        sum = arith::AddFOp::create(b, loc, sum, other);
      }
  }

  const BlockPlan &plan;
  OpBuilder &b;
  Location loc;
  scf::ForOp loop;
  linalg::GenericOp pw;
  llvm::SetVector<Operation *> needed;
  Value thread, head, row, unit, slice, active, first, column;
  /// The block's rank in its cluster (null for a block a head), and the
  /// address of its staged vector.
  Value rank, stagedAddress, barrierAddress;
  gpu::AddressSpaceAttr workgroup;
  Value shared, staged;
  SmallVector<InputKind> kinds;
  SmallVector<Value> inits;
  SmallVector<unsigned> liveInputs;
  SmallVector<Type> liveTypes;
  bool prefetchGates = false;
};

class BlockKernelBuilder : KernelBuilderBase {
public:
  BlockKernelBuilder(const StepRecurrence &r, const BlockPlan &plan,
                     OpBuilder &b, Location loc)
      : KernelBuilderBase(plan, b, loc, r.loop, r.pointwise), r(r) {}

  void build(gpu::LaunchOp launch, Value steps);

private:
  /// Weight `position` of a packed 8-byte word, as f32.
  Value unpackWeight(Value word, int64_t position) {
    Type weightType = r.weightElementType();
    unsigned bits = weightType.getIntOrFloatBitWidth();
    if (position)
      word =
          arith::ShRUIOp::create(b, loc, word,
                                 arith::ConstantIntOp::create(
                                     b, loc, word.getType(), position * bits));
    Value narrow = plan.wordBits > static_cast<int64_t>(bits)
                       ? Value(arith::TruncIOp::create(
                             b, loc, b.getIntegerType(bits), word))
                       : word;
    return toF32(arith::BitcastOp::create(b, loc, weightType, narrow));
  }

  const StepRecurrence &r;
};

void BlockKernelBuilder::build(gpu::LaunchOp launch, Value steps) {
  const int64_t units = r.headSize, gates = r.gates;
  needed = rnn::opsNeededByGroup(r);

  const int64_t slices = plan.slices, sliceSize = plan.sliceSize;
  setUp(launch, r.heads, units);
  // U[g*N + n, k] of this head, zero beyond K (the padding).
  auto weightAt = [&](Value g, Value n, Value k) -> Value {
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                          constant(units));
    Value kk = arith::MinUIOp::create(b, loc, k, constant(units - 1));
    Value nn = arith::MinUIOp::create(b, loc, n, constant(units - 1));
    Value rowOfU = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, g, constant(units)), nn);
    Value w = r.headwise ? memref::LoadOp::create(b, loc, r.weight,
                                                  ValueRange{head, rowOfU, kk})
                         : memref::LoadOp::create(b, loc, r.weight,
                                                  ValueRange{rowOfU, kk});
    return arith::SelectOp::create(
        b, loc, inRange, toF32(w),
        arith::ConstantOp::create(b, loc, b.getF32Type(),
                                  b.getF32FloatAttr(0.0f)));
  };
  Value c0 = constant(0), c1 = constant(1), c2 = constant(2);
  // weights[g][j][lane]: what lane `thread` multiplies by input j of its
  // slice for gate g.
  Value weights;
  SmallVector<Value> weightRegisters;
  if (plan.weightsInRegisters) {
    for (int64_t g = 0; g < gates; ++g)
      for (int64_t j = 0; j < sliceSize; ++j)
        weightRegisters.push_back(weightAt(
            constant(g), unit,
            arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(b, loc, slice, constant(sliceSize)),
                constant(j))));
  } else {
    // words[j][w][lane]: gates w*P .. w*P + P - 1 of the lane's input j,
    // P to an 8-byte word (zero past the last gate); lanes side by side.
    Type weightType = r.weightElementType();
    unsigned bits = weightType.getIntOrFloatBitWidth();
    Type wordType = b.getIntegerType(plan.wordBits);
    int64_t lanes = plan.blockUnits * slices;
    weights = memref::ViewOp::create(
        b, loc,
        MemRefType::get({sliceSize, plan.words, lanes}, wordType,
                        MemRefLayoutAttrInterface{}, workgroup),
        shared, constant(0), ValueRange{});
    auto copy = scf::ForOp::create(b, loc, thread,
                                   constant(sliceSize * plan.words * lanes),
                                   constant(plan.threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(copy.getBody());
    // Consecutive threads read consecutive inputs k of one row of U (the
    // loads coalesce) and scatter them into the lanes' layout: i = (n, w, k)
    // with k fastest, k = s*KS + j.
    Value i = copy.getInductionVar();
    int64_t padded = slices * sliceSize;
    Value k = arith::RemUIOp::create(b, loc, i, constant(padded));
    Value nw = arith::DivUIOp::create(b, loc, i, constant(padded));
    Value word = arith::RemUIOp::create(b, loc, nw, constant(plan.words));
    Value blockUnit = arith::DivUIOp::create(b, loc, nw, constant(plan.words));
    auto [lane, j] = laneAndSlot(blockUnit, k);
    Value n = unitOf(blockUnit);
    Value packed = arith::ConstantIntOp::create(b, loc, wordType, 0);
    for (int64_t p = 0; p < plan.gatesPerWord; ++p) {
      Value g = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, word, constant(plan.gatesPerWord)),
          constant(p));
      // A gate past the last reads gate G - 1 and is masked to zero.
      Value real = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, g,
                                         constant(gates));
      Value w = weightAt(arith::MinUIOp::create(b, loc, g, constant(gates - 1)),
                         n, k);
      w = arith::SelectOp::create(
          b, loc, real, w,
          arith::ConstantOp::create(b, loc, b.getF32Type(),
                                    b.getF32FloatAttr(0.0f)));
      if (w.getType() != weightType)
        w = arith::TruncFOp::create(b, loc, weightType, w);
      Value asInt = arith::BitcastOp::create(b, loc, b.getIntegerType(bits), w);
      Value wide = asInt;
      if (plan.wordBits > bits)
        wide = arith::ExtUIOp::create(b, loc, wordType, asInt);
      if (p)
        wide = arith::ShLIOp::create(
            b, loc, wide,
            arith::ConstantIntOp::create(b, loc, wordType, p * bits));
      packed = arith::OrIOp::create(b, loc, packed, wide);
    }
    memref::StoreOp::create(b, loc, packed, weights, ValueRange{j, word, lane});
  }
  // Both halves zero (the padding stays so), then h_0: the unit's first
  // lane stages its unit, or, where a cluster shares the head, the block
  // stages all of it.
  zeroStaged();
  gpu::BarrierOp::create(b, loc);
  Value stagedUnit = stagedIndex(unit);
  if (plan.clusterSize > 1) {
    auto copy = scf::ForOp::create(b, loc, thread, constant(units),
                                   constant(plan.threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(copy.getBody());
    Value k = copy.getInductionVar();
    Value h = memref::LoadOp::create(
        b, loc, r.state,
        ValueRange{
            row, arith::AddIOp::create(
                     b, loc,
                     arith::MulIOp::create(b, loc, head, constant(units)), k)});
    memref::StoreOp::create(b, loc, toF32(h), staged,
                            ValueRange{c0, stagedIndex(k)});
  } else {
    auto stage =
        scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, active, first),
                          /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&stage.getThenRegion().front());
    Value h = memref::LoadOp::create(b, loc, r.state, ValueRange{row, column});
    memref::StoreOp::create(b, loc, toF32(h), staged,
                            ValueRange{c0, stagedUnit});
  }

  // What each input is, and the values that live across steps: the
  // invariant inputs, the carried states, the first step's prefetched
  // inputs, loaded before the step loop.
  classifyInputs(
      [&](OpOperand *input) -> std::optional<InputKind> {
        if (r.gateOfOperand[input->getOperandNumber()])
          return InputKind::Gate;
        return std::nullopt;
      },
      r.accumulates);
  IRMapping outside = cloneOutside();
  SmallVector<Value> initial =
      loadLive(viewsFor(c0, outside), /*onlyPrefetched=*/false);
  const bool clustered = plan.clusterSize > 1;
  if (clustered)
    initBarriers();
  // Every block of a cluster has staged h_0 before any writes h_1.
  startBarrier();

  auto stepLoop = scf::ForOp::create(b, loc, c0, steps, c1, initial);
  dropImplicitYield(*stepLoop.getBody());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(stepLoop.getBody());
  Value step = stepLoop.getInductionVar();
  Value parity = arith::RemUIOp::create(b, loc, step, c2);
  Value nextParity = arith::SubIOp::create(b, loc, c1, parity);
  IRMapping views = viewsFor(step, outside);
  // The next step's views (the last step reads its own again).
  Value last = arith::SubIOp::create(b, loc, steps, c1);
  Value notLast =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, step, last);
  Value next = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, step, c1), last);
  IRMapping nextViews = viewsFor(next, outside);

  // Next step's prefetched inputs first: their loads overlap the product
  // (and the wait for h_{t-1}).
  SmallVector<Value> nextLive = loadLive(nextViews, /*onlyPrefetched=*/true);
  if (clustered) {
    // Step t writes h_t into half (t+1) % 2 of every block but on the last
    // step (nobody reads it); step t >= 1 waits for half t % 2, the
    // ((t - 1) / 2)-th phase of its mbarrier (step 0 reads h_0, staged
    // by the block itself).
    expectStaged(nextParity, units * 4, notLast);
    auto wait = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, step, c1),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inWait(b);
    b.setInsertionPointToStart(&wait.getThenRegion().front());
    waitStaged(parity,
               arith::RemUIOp::create(
                   b, loc,
                   arith::DivUIOp::create(
                       b, loc, arith::SubIOp::create(b, loc, step, c1), c2),
                   c2));
  }

  // This lane's part of the gate sums of its unit over the head's staged
  // h_{t-1} (unrolled: the loads issue together), then the unit's lanes
  // combine their parts (every lane ends with the sums).
  SmallVector<Value> sums(gates,
                          arith::ConstantOp::create(b, loc, b.getF32Type(),
                                                    b.getF32FloatAttr(0.0f)));
  for (int64_t j = 0; j < sliceSize; ++j) {
    Value position = arith::AddIOp::create(b, loc, constant(j * slices), slice);
    Value h =
        memref::LoadOp::create(b, loc, staged, ValueRange{parity, position});
    SmallVector<Value> words;
    if (!plan.weightsInRegisters)
      for (int64_t word = 0; word < plan.words; ++word)
        words.push_back(memref::LoadOp::create(
            b, loc, weights, ValueRange{constant(j), constant(word), thread}));
    for (int64_t g = 0; g < gates; ++g) {
      Value w = plan.weightsInRegisters
                    ? weightRegisters[g * sliceSize + j]
                    : unpackWeight(words[g / plan.gatesPerWord],
                                   g % plan.gatesPerWord);
      sums[g] = math::FmaOp::create(b, loc, h, w, sums[g]);
    }
  }
  combineLanes(sums);
  // Where the other blocks write into this block's staged vector, none may
  // write the next step's half before every thread here has read the last
  // step's from it: they write after their own reads, behind this barrier.
  if (clustered)
    gpu::BarrierOp::create(b, loc);

  auto work = scf::IfOp::create(b, loc, liveTypes, active,
                                /*withElseRegion=*/true);
  dropImplicitYields(work);
  {
    OpBuilder::InsertionGuard inElse(b);
    b.setInsertionPointToStart(&work.getElseRegion().front());
    scf::YieldOp::create(b, loc, stepLoop.getRegionIterArgs());
  }
  b.setInsertionPointToStart(&work.getThenRegion().front());
  auto live = [&](unsigned index) {
    return stepLoop.getRegionIterArgs()[llvm::find(liveInputs, index) -
                                        liveInputs.begin()];
  };
  IRMapping scalars = cloneGroup(
      [&](unsigned index, OpOperand *input) -> Value {
        Value sum = sums[*r.gateOfOperand[input->getOperandNumber()]];
        if (!r.accumulates)
          return sum;
        return arith::AddFOp::create(b, loc, live(index), sum);
      },
      live, views);
  // The unit's first lane stores what the group writes, and stages the
  // new state for the next step.
  storeGroupResults(scalars, views, [&](unsigned index, Value result) {
    if (inits[index] != r.state)
      return;
    if (!clustered) {
      stage(nextParity, stagedUnit, toF32(result));
      return;
    }
    auto notLastStep =
        scf::IfOp::create(b, loc, notLast, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inStage(b);
    b.setInsertionPointToStart(&notLastStep.getThenRegion().front());
    stage(nextParity, stagedUnit, toF32(result));
  });
  // What lives on: the new carried states, the next step's prefetches.
  scf::YieldOp::create(b, loc, nextCarried(nextLive, live, scalars));
  b.setInsertionPointAfter(work);
  if (!clustered)
    gpu::BarrierOp::create(b, loc);
  scf::YieldOp::create(b, loc, work.getResults());
}

/// The kernel of a derived backward's step loop (rnn::AdjointRecurrence):
/// the same blocks, lanes and weights as BlockKernelBuilder's, in the other
/// order. Each step the unit's first lane runs the group with the state
/// gradient in a register, writes what it writes and stages its G gate
/// gradients (as the product reads them: rounded to P's type) in shared
/// memory; after the barrier every lane adds its slice of the head's G*N
/// staged gradients times its weights (U[g*N + j, n]) and the unit's lanes
/// combine their parts by shuffles: the next step's state gradient (added
/// to the group's own value of it where the product accumulates onto what
/// the group wrote into S, the GRU's dh ⊙ z), stored into S after the last
/// step.
class AdjointKernelBuilder : KernelBuilderBase {
public:
  AdjointKernelBuilder(const rnn::AdjointRecurrence &r, const BlockPlan &plan,
                       OpBuilder &b, Location loc)
      : KernelBuilderBase(plan, b, loc, r.loop, r.pointwise), r(r) {}

  void build(gpu::LaunchOp launch, Value steps);

private:
  const rnn::AdjointRecurrence &r;
};

void AdjointKernelBuilder::build(gpu::LaunchOp launch, Value steps) {
  const int64_t units = r.headSize, inputs = r.gates * r.headSize;
  needed = rnn::opsNeededByGroup(r);
  const int64_t slices = plan.slices, sliceSize = plan.sliceSize;
  setUp(launch, r.heads, units);
  // U[k, n] (dense, [G*H, H]) or R[head, k, n], zero beyond G*N.
  Type weightType = r.weightElementType();
  auto weightAt = [&](Value k, Value n) -> Value {
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                          constant(inputs));
    Value kk = arith::MinUIOp::create(b, loc, k, constant(inputs - 1));
    Value nn = arith::MinUIOp::create(b, loc, n, constant(units - 1));
    Value w =
        r.headwise
            ? memref::LoadOp::create(b, loc, r.weight, ValueRange{head, kk, nn})
            : memref::LoadOp::create(b, loc, r.weight, ValueRange{kk, nn});
    return arith::SelectOp::create(b, loc, inRange, toF32(w), zero());
  };
  Value c0 = constant(0), c1 = constant(1), c2 = constant(2);
  auto laneInput = [&](Value lane, Value j) {
    return arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, arith::RemUIOp::create(b, loc, lane, constant(slices)),
            constant(sliceSize)),
        j);
  };
  SmallVector<Value> weightRegisters;
  Value weights;
  if (plan.weightsInRegisters) {
    for (int64_t j = 0; j < sliceSize; ++j)
      weightRegisters.push_back(weightAt(laneInput(thread, constant(j)), unit));
  } else {
    // weights[j][lane]: the lane's weight for its input j, in P's type.
    int64_t lanes = plan.blockUnits * slices;
    weights = memref::ViewOp::create(
        b, loc,
        MemRefType::get({sliceSize, lanes}, weightType,
                        MemRefLayoutAttrInterface{}, workgroup),
        shared, c0, ValueRange{});
    auto copy = scf::ForOp::create(b, loc, thread, constant(sliceSize * lanes),
                                   constant(plan.threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(copy.getBody());
    // Consecutive threads read consecutive units n of one row k of U (the
    // loads coalesce) and scatter them into the lanes' layout: i = (k, n)
    // with n fastest, k = s*KS + j.
    Value i = copy.getInductionVar();
    Value blockUnit =
        arith::RemUIOp::create(b, loc, i, constant(plan.blockUnits));
    Value k = arith::DivUIOp::create(b, loc, i, constant(plan.blockUnits));
    auto [lane, j] = laneAndSlot(blockUnit, k);
    Value n = unitOf(blockUnit);
    Value w = weightAt(k, n);
    if (w.getType() != weightType)
      w = arith::TruncFOp::create(b, loc, weightType, w);
    memref::StoreOp::create(b, loc, w, weights, ValueRange{j, lane});
  }
  zeroStaged();

  // The group's inputs: S (the register), carried states, prefetched,
  // invariant and loaded values, as for the forward's kernel.
  classifyInputs(
      [&](OpOperand *input) -> std::optional<InputKind> {
        if (input->get() == r.state)
          return InputKind::State;
        return std::nullopt;
      },
      /*gatesPrefetched=*/false);
  IRMapping outside = cloneOutside();
  SmallVector<Value> initial =
      loadLive(viewsFor(c0, outside), /*onlyPrefetched=*/false);
  // The state gradient S_0, last among the loop's values.
  initial.push_back(
      memref::LoadOp::create(b, loc, r.state, ValueRange{row, column}));
  const bool clustered = plan.clusterSize > 1;
  if (clustered)
    initBarriers();
  // Every block of a cluster has zeroed its staged vector before any
  // writes into it.
  startBarrier();
  // What a step stages into each block: every unit's gate gradients.
  int64_t stagedBytes = llvm::count_if(r.gateOfInit,
                                       [](std::optional<int64_t> gate) {
                                         return gate.has_value();
                                       }) *
                        units * 4;

  auto stepLoop = scf::ForOp::create(b, loc, c0, steps, c1, initial);
  Value finalState;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(stepLoop.getBody());
    Value step = stepLoop.getInductionVar();
    Value parity = arith::RemUIOp::create(b, loc, step, c2);
    // Step t stages into half t % 2 of every block: the (t / 2)-th phase of
    // its mbarrier.
    if (clustered)
      expectStaged(parity, stagedBytes);
    IRMapping views = viewsFor(step, outside);
    Value last = arith::SubIOp::create(b, loc, steps, c1);
    Value next = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, step, c1), last);
    IRMapping nextViews = viewsFor(next, outside);
    SmallVector<Value> nextLive = loadLive(nextViews, /*onlyPrefetched=*/true);
    ValueRange iterArgs = stepLoop.getRegionIterArgs();
    Value state = iterArgs.back();
    auto live = [&](unsigned index) {
      return iterArgs[llvm::find(liveInputs, index) - liveInputs.begin()];
    };

    // Where the product accumulates onto what the group writes into S, that
    // value leaves the group's branch too (last among its results).
    SmallVector<Type> workTypes(liveTypes);
    if (r.accumulates)
      workTypes.push_back(b.getF32Type());
    auto work = scf::IfOp::create(b, loc, workTypes, active,
                                  /*withElseRegion=*/true);
    dropImplicitYields(work);
    {
      OpBuilder::InsertionGuard inElse(b);
      b.setInsertionPointToStart(&work.getElseRegion().front());
      SmallVector<Value> unchanged(iterArgs.drop_back());
      if (r.accumulates)
        unchanged.push_back(zero());
      scf::YieldOp::create(b, loc, unchanged);
    }
    b.setInsertionPointToStart(&work.getThenRegion().front());
    IRMapping scalars =
        cloneGroup([&](unsigned, OpOperand *) { return state; }, live, views);
    // The unit's first lane stores what the group writes, and stages its
    // gate gradients for the product.
    storeGroupResults(scalars, views, [&](unsigned index, Value result) {
      if (std::optional<int64_t> gate = r.gateOfInit[index]) {
        Value k = arith::AddIOp::create(b, loc, constant(*gate * units), unit);
        stage(parity, stagedIndex(k), toF32(result));
      }
    });
    SmallVector<Value> carried = nextCarried(nextLive, live, scalars);
    if (r.accumulates) {
      auto yield = cast<linalg::YieldOp>(pw.getBody()->getTerminator());
      carried.push_back(
          scalars.lookupOrDefault(yield.getOperand(*r.stateInit)));
    }
    scf::YieldOp::create(b, loc, carried);
    b.setInsertionPointAfter(work);
    if (clustered)
      waitStaged(parity,
                 arith::RemUIOp::create(
                     b, loc, arith::DivUIOp::create(b, loc, step, c2), c2));
    else
      gpu::BarrierOp::create(b, loc);

    // The product: this lane's slice of the staged gradients, then the
    // unit's lanes combined (onto the group's value of S where it
    // accumulates).
    Value sum = zero();
    for (int64_t j = 0; j < sliceSize; ++j) {
      Value position =
          arith::AddIOp::create(b, loc, constant(j * slices), slice);
      Value g =
          memref::LoadOp::create(b, loc, staged, ValueRange{parity, position});
      Value w = plan.weightsInRegisters
                    ? weightRegisters[j]
                    : toF32(memref::LoadOp::create(
                          b, loc, weights, ValueRange{constant(j), thread}));
      sum = math::FmaOp::create(b, loc, g, w, sum);
    }
    combineLanes(sum);
    // The other blocks stage the step after next into this half: only
    // after every thread here has read it (they stage the next step behind
    // this barrier, and wait for it before they stage again).
    if (clustered)
      gpu::BarrierOp::create(b, loc);
    SmallVector<Value> results(work.getResults());
    if (r.accumulates)
      sum = arith::AddFOp::create(b, loc, results.pop_back_val(), sum);
    results.push_back(sum);
    scf::YieldOp::create(b, loc, results);
  }
  finalState = stepLoop.getResults().back();
  // S after the loop: the last step's product.
  auto store =
      scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, active, first),
                        /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  memref::StoreOp::create(b, loc, finalState, r.state, ValueRange{row, column});
}

/// Runs `loop` as a kernel of `heads` x B blocks (B: `state`'s rows) whose
/// body `buildBody` writes for the plan of B's range in `plans`; the loop
/// stays as the fallback.
void rewrite(scf::ForOp loop, Value state, int64_t heads,
             const BlockPlans &plans,
             function_ref<void(OpBuilder &, gpu::LaunchOp, const BlockPlan &)>
                 buildBody) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  // The kernel runs for a non-empty sequence and batch up to the last
  // plan's largest batch, unless the runtime says not to
  // (RNN_CUDA_PERSISTENT=0, for comparisons in one process); the step loop
  // otherwise.
  Value enabled = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      func::CallOp::create(b, loc, kPersistentEnabled,
                           TypeRange{b.getI32Type()}, ValueRange{})
          .getResult(0),
      arith::ConstantIntOp::create(b, loc, 0, 32));
  for (const BlockPlan &plan : plans) {
    Value batch;
    Value fits = rnn::buildBatchGuard(b, loop, state, plan.maxBatch, 1, batch);
    fits = arith::AndIOp::create(b, loc, fits, enabled);
    auto choice = scf::IfOp::create(b, loc, fits, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      auto index = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      Value one = index(1);
      Value blocks =
          arith::MulIOp::create(b, loc, batch, index(heads * plan.clusterSize));
      Value sharedBytes =
          arith::ConstantIntOp::create(b, loc, plan.sharedBytes, 32);
      gpu::LaunchOp launch;
      if (plan.clusterSize == 1) {
        launch =
            gpu::LaunchOp::create(b, loc, blocks, one, one, index(plan.threads),
                                  one, one, sharedBytes);
      } else {
        launch = gpu::LaunchOp::create(
            b, loc, blocks, one, one, index(plan.threads), one, one,
            sharedBytes, /*asyncTokenType=*/nullptr,
            /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
            /*privateAttributions=*/{}, index(plan.clusterSize), one, one);
        // The builder leaves out the block arguments of the cluster ids and
        // sizes that the op's verifier expects after the other twelve.
        Block &body = launch.getBody().front();
        while (body.getNumArguments() < launch.getNumConfigRegionAttributes())
          body.addArgument(b.getIndexType(), loc);
      }
      // Its blocks run for the whole sequence: launched in stream order,
      // never early behind the grid ahead (overlap-kernel-launches).
      launch->setAttr(rnn::kPersistentLaunchAttr, b.getUnitAttr());
      OpBuilder::InsertionGuard inKernel(b);
      b.setInsertionPointToStart(&launch.getBody().front());
      buildBody(b, launch, plan);
      gpu::TerminatorOp::create(b, loc);
    }
    // The next plan's test (larger batches), or the loop, in the else.
    b.setInsertionPoint(choice.getElseRegion().front().getTerminator());
  }
  loop->moveBefore(&*b.getInsertionPoint());
}

struct ConvertStepLoopsToBlockKernelsPass
    : rnn::impl::ConvertStepLoopsToBlockKernelsBase<
          ConvertStepLoopsToBlockKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    // Clusters of more than 8 blocks are not portable: the runtime lets
    // the kernel use them (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_
    // ALLOWED), which sm_90 allows up to 16.
    if (maxClusterSize < 1 || maxClusterSize > 16 ||
        !llvm::isPowerOf2_64(maxClusterSize)) {
      getOperation().emitError()
          << "convert-step-loops-to-block-kernels: max-cluster-size must be "
             "a power of two from 1 to 16, got "
          << static_cast<int64_t>(maxClusterSize);
      return signalPassFailure();
    }
    std::vector<std::pair<StepRecurrence, BlockPlans>> found;
    std::vector<std::pair<rnn::AdjointRecurrence, BlockPlans>> adjoints;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::LaunchOp>())
        return;
      if (FailureOr<StepRecurrence> r = rnn::matchStepRecurrence(loop);
          succeeded(r)) {
        if (BlockPlans plans =
                plansFor(*r, maxSharedBytes,
                         rnn::clusterLimit(*r, maxClusterSize, gridKernels));
            !plans.empty())
          found.emplace_back(*r, plans);
      } else if (FailureOr<rnn::AdjointRecurrence> r =
                     rnn::matchAdjointRecurrence(loop);
                 succeeded(r)) {
        if (BlockPlans plans =
                plansFor(*r, maxSharedBytes,
                         rnn::clusterLimit(*r, maxClusterSize, gridKernels));
            !plans.empty())
          adjoints.emplace_back(*r, plans);
      }
    });
    if (found.empty() && adjoints.empty())
      return;
    ModuleOp module = getOperation();
    if (!module.lookupSymbol(kPersistentEnabled)) {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      func::FuncOp::create(
          b, module.getLoc(), kPersistentEnabled,
          b.getFunctionType(TypeRange{}, TypeRange{b.getI32Type()}))
          .setPrivate();
    }
    for (auto &entry : found) {
      const StepRecurrence &r = entry.first;
      scf::ForOp loop = r.loop;
      rewrite(loop, r.state, r.heads, entry.second,
              [&](OpBuilder &b, gpu::LaunchOp launch, const BlockPlan &plan) {
                BlockKernelBuilder(r, plan, b, loop.getLoc())
                    .build(launch, loop.getUpperBound());
              });
    }
    for (auto &entry : adjoints) {
      const rnn::AdjointRecurrence &r = entry.first;
      scf::ForOp loop = r.loop;
      rewrite(loop, r.state, r.heads, entry.second,
              [&](OpBuilder &b, gpu::LaunchOp launch, const BlockPlan &plan) {
                AdjointKernelBuilder(r, plan, b, loop.getLoc())
                    .build(launch, loop.getUpperBound());
              });
    }
  }
};

} // namespace

/// What `plans` (for heads of `units` units and `gates` gates) make of a
/// loop, or why the step loop stays.
static std::string describePlans(const BlockPlans &plans, int64_t units,
                                 int64_t gates, int64_t heads,
                                 int64_t maxSharedBytes,
                                 int64_t maxClusterSize) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (plans.empty()) {
    os << "step loop: a head of " << units << " units and " << gates << " gate"
       << (gates == 1 ? "" : "s") << " does not fit in "
       << (maxClusterSize > 1
               ? "a cluster of " + std::to_string(maxClusterSize) + " blocks"
               : std::string("one block"))
       << " (" << maxSharedBytes
       << " bytes of shared memory, 1024 threads a block) or runs faster so";
    return text;
  }
  for (auto [index, plan] : llvm::enumerate(plans)) {
    os << (index ? "; for B up to " : "block kernel for B up to ")
       << plan.maxBatch;
    if (index + 1 == plans.size())
      os << " (the step loop beyond)";
    os << ": ";
    if (plan.clusterSize > 1)
      os << heads << " x B clusters of " << plan.clusterSize << " blocks, "
         << plan.blockUnits << " units and " << plan.threads
         << " threads a block (the state exchanged through distributed shared "
            "memory), ";
    else
      os << heads << " x B blocks of " << plan.threads << " threads, ";
    os << plan.slices << " lane" << (plan.slices == 1 ? "" : "s")
       << " a unit of " << plan.sliceSize << " inputs each, the weights in ";
    if (plan.weightsInRegisters)
      os << "registers";
    else
      os << "shared memory (" << plan.gatesPerWord << " gate"
         << (plan.gatesPerWord == 1 ? "" : "s") << " a word)";
    os << ", " << plan.sharedBytes << " bytes of shared memory, about "
       << plan.stepCycles << " cycles a step";
  }
  return text;
}

std::string rnn::describeBlockKernel(const StepRecurrence &r,
                                     int64_t maxSharedBytes,
                                     int64_t maxClusterSize) {
  return describePlans(plansFor(r, maxSharedBytes, maxClusterSize), r.headSize,
                       r.gates, r.heads, maxSharedBytes, maxClusterSize);
}

std::string rnn::describeBlockKernel(const AdjointRecurrence &r,
                                     int64_t maxSharedBytes,
                                     int64_t maxClusterSize) {
  return describePlans(plansFor(r, maxSharedBytes, maxClusterSize), r.headSize,
                       r.gates, r.heads, maxSharedBytes, maxClusterSize);
}
