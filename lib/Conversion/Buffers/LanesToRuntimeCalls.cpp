//===- LanesToRuntimeCalls.cpp - A layer wavefront's lanes on streams -----===//
//
// rnn-layer-wavefront marks each layer's chunk as a lane; here, after
// bufferization, each lane becomes the ops it holds, bracketed by the
// runtime calls that put them on the lane's stream. A lane may run beside
// the others only if the loop around them does nothing else with memory:
// an op between lanes would run on the call's stream, unordered with the
// lanes still running.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/MapVector.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTLANESTORUNTIMECALLS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kLaneBegin = "rnn_cuda_lane_begin";

/// A lane: the region and its mark.
struct Lane {
  scf::ExecuteRegionOp region;
  func::CallOp begin;
  int64_t lane, after;
};

/// The mark of `region` (a call of rnn_cuda_lane_begin directly in its one
/// block), or null.
func::CallOp laneMark(scf::ExecuteRegionOp region) {
  if (!region.getRegion().hasOneBlock())
    return {};
  for (auto call : region.getRegion().front().getOps<func::CallOp>())
    if (call.getCallee() == kLaneBegin)
      return call;
  return {};
}

bool isLane(Operation *op) {
  auto region = dyn_cast<scf::ExecuteRegionOp>(op);
  return region && laneMark(region);
}

/// Whether the lanes in `block` may run at once: everything else in it is
/// scalar arithmetic, a view or the terminator.
bool onlyLanes(Block &block) {
  return llvm::all_of(block, [](Operation &op) {
    return isLane(&op) || op.hasTrait<OpTrait::IsTerminator>() ||
           isa<ViewLikeOpInterface, memref::DimOp>(op) || isPure(&op);
  });
}

/// The buffer `value` views (through view ops), or `value`.
Value rootBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// The buffers (roots of views) that the ops of `block` read and write;
/// an op whose effects are unknown writes every buffer it takes.
struct Accesses {
  llvm::DenseSet<Value> reads, writes;
};
Accesses accessesOf(Block &block) {
  Accesses accesses;
  block.walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    // A loop or branch touches memory through its nested ops, walked too
    // (a linalg op has both: its own effects count).
    if (!effects && op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return;
    for (Value operand : op->getOperands()) {
      if (!isa<BaseMemRefType>(operand.getType()))
        continue;
      Value root = rootBuffer(operand);
      if (!effects) {
        accesses.writes.insert(root);
        continue;
      }
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffectsOnValue(operand, instances);
      for (const MemoryEffects::EffectInstance &instance : instances)
        (isa<MemoryEffects::Read>(instance.getEffect()) ? accesses.reads
                                                        : accesses.writes)
            .insert(root);
    }
  });
  return accesses;
}

/// Whether lanes that wait for no other lane (a group side by side) touch
/// a buffer that one of them writes. Bufferization sees the lanes one after
/// the other and may give two of them one buffer (CSE can merge their
/// empty tensors into one from before the group); at run time they run at
/// once. Lanes of a wavefront's chunk loop are not checked: each chunk's
/// buffers are sized by the chunk, so none comes from outside the lane but
/// the sequences, which a lane writes at its chunk's rows for the next
/// lane to read.
bool independentLanesShareBuffers(MutableArrayRef<Lane> lanes) {
  SmallVector<Accesses> all;
  for (Lane &lane : lanes)
    if (lane.after < 0)
      all.push_back(accessesOf(lane.region.getRegion().front()));
  auto writesWhatOtherTouches = [](const Accesses &a, const Accesses &b) {
    return llvm::any_of(a.writes, [&](Value buffer) {
      return b.reads.contains(buffer) || b.writes.contains(buffer);
    });
  };
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      if (writesWhatOtherTouches(all[i], all[j]) ||
          writesWhatOtherTouches(all[j], all[i]))
        return true;
  return false;
}

/// The private declaration of the runtime function `name`, added once.
func::FuncOp runtimeFunction(ModuleOp module, StringRef name,
                             TypeRange arguments) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(arguments, TypeRange()));
  func.setPrivate();
  return func;
}

/// Replaces `region` by the ops of its block, in place.
void inlineRegion(scf::ExecuteRegionOp region) {
  Block &body = region.getRegion().front();
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  SmallVector<Value> results(yield.getOperands());
  region->getBlock()->getOperations().splice(region->getIterator(),
                                             body.getOperations(), body.begin(),
                                             std::prev(body.end()));
  region->replaceAllUsesWith(results);
  region->erase();
}

struct ConvertLanesToRuntimeCallsPass
    : public rnn::impl::ConvertLanesToRuntimeCallsBase<
          ConvertLanesToRuntimeCallsPass> {
  using ConvertLanesToRuntimeCallsBase::ConvertLanesToRuntimeCallsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The lanes, grouped by the block that holds them (the chunk loop's
    // body), in order.
    llvm::MapVector<Block *, SmallVector<Lane>> lanesByBlock;
    WalkResult walk = module.walk([&](scf::ExecuteRegionOp region) {
      func::CallOp begin = laneMark(region);
      if (!begin)
        return WalkResult::advance();
      APInt lane, after;
      if (begin.getNumOperands() != 2 ||
          !matchPattern(begin.getOperand(0), m_ConstantInt(&lane)) ||
          !matchPattern(begin.getOperand(1), m_ConstantInt(&after)) ||
          lane.getSExtValue() < 0 || lane.getSExtValue() > 15 ||
          after.getSExtValue() >= lane.getSExtValue()) {
        begin.emitOpError("marks a lane with constants (lane, after), "
                          "0 <= lane < 16 and after < lane");
        return WalkResult::interrupt();
      }
      lanesByBlock[region->getBlock()].push_back(
          {region, begin, lane.getSExtValue(), after.getSExtValue()});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    Type i64 = IntegerType::get(module.getContext(), 64);
    for (auto &[block, lanes] : lanesByBlock) {
      bool concurrent =
          streams && onlyLanes(*block) && !independentLanesShareBuffers(lanes);
      // A group of lanes side by side (rnn-layer-wavefront) is a region of
      // its own; once its lanes are inlined, so is it, before the join.
      auto group = dyn_cast<scf::ExecuteRegionOp>(block->getParentOp());
      if (concurrent)
        ++numConcurrent;
      else
        ++numInOrder;
      for (Lane &lane : lanes) {
        Block &body = lane.region.getRegion().front();
        if (concurrent) {
          // Everything the lane holds goes to its stream: the mark first,
          // the end last (after the frees bufferization put at its end).
          lane.begin->moveBefore(&body, body.begin());
          for (Value operand : lane.begin.getOperands())
            if (Operation *def = operand.getDefiningOp();
                def && def->getBlock() == &body)
              def->moveBefore(lane.begin);
          OpBuilder b(body.getTerminator());
          Value id = arith::ConstantIntOp::create(b, lane.region.getLoc(), i64,
                                                  lane.lane);
          func::CallOp::create(
              b, lane.region.getLoc(),
              runtimeFunction(module, "rnn_cuda_lane_end", {i64}),
              ValueRange{id});
        } else {
          lane.begin->erase();
        }
        inlineRegion(lane.region);
      }
      if (concurrent) {
        // Right after the loop, before the frees that follow it; lanes in
        // a function's body join before it returns.
        Operation *loop = block->getParentOp();
        OpBuilder b(loop->getContext());
        if (isa<FunctionOpInterface>(loop))
          b.setInsertionPoint(block->getTerminator());
        else
          b.setInsertionPointAfter(loop);
        func::CallOp::create(b, loop->getLoc(),
                             runtimeFunction(module, "rnn_cuda_lanes_join", {}),
                             ValueRange{});
      }
      if (group)
        inlineRegion(group);
    }
    // In order, the marks are gone, and so is their declaration.
    if (auto declaration = module.lookupSymbol<func::FuncOp>(kLaneBegin))
      if (declaration.isExternal() &&
          SymbolTable::symbolKnownUseEmpty(declaration, module))
        declaration.erase();
  }
};

} // namespace
