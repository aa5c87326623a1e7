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
      bool concurrent = streams && onlyLanes(*block);
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
