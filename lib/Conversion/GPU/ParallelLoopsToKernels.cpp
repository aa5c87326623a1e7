//===- ParallelLoopsToKernels.cpp - One launch per parallel loop nest -----===//

#include "GuardedLaunch.h"
#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTPARALLELLOOPSTOKERNELS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

struct ConvertParallelLoopsToKernelsPass
    : public rnn::impl::ConvertParallelLoopsToKernelsBase<
          ConvertParallelLoopsToKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>() &&
          !loop->getParentOfType<gpu::GPUModuleOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      if (failed(convert(loop)))
        return signalPassFailure();
  }

  LogicalResult convert(scf::ParallelOp loop) {
    if (loop.getNumResults() != 0)
      return loop.emitOpError("with reductions cannot become a kernel");
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    // Trip counts per dimension and in all.
    SmallVector<Value> counts;
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      Value span = arith::SubIOp::create(b, loc, ub, lb);
      Value count = arith::CeilDivUIOp::create(b, loc, span, step);
      counts.push_back(count);
      total = arith::MulIOp::create(b, loc, total, count);
    }
    Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
    Value grid = arith::CeilDivUIOp::create(b, loc, total, block);
    // An empty iteration space launches nothing.
    gpu::LaunchOp launch = rnn::createGuardedLaunch(b, loc, total, grid, block);
    OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
    Value id = arith::AddIOp::create(
        kb, loc, arith::MulIOp::create(kb, loc, launch.getBlockIds().x, block),
        launch.getThreadIds().x);
    Value inRange =
        arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, id, total);
    auto inside = scf::IfOp::create(kb, loc, inRange, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    // Row-major delinearisation: the last dimension varies fastest.
    SmallVector<Value> ivs(counts.size());
    Value rest = id;
    for (int64_t d = counts.size() - 1; d >= 0; --d) {
      Value index =
          d == 0 ? rest
                 : Value(arith::RemUIOp::create(ib, loc, rest, counts[d]));
      if (d > 0)
        rest = arith::DivUIOp::create(ib, loc, rest, counts[d]);
      Value scaled = arith::MulIOp::create(ib, loc, index, loop.getStep()[d]);
      ivs[d] = arith::AddIOp::create(ib, loc, loop.getLowerBound()[d], scaled);
    }
    IRMapping mapping;
    for (auto [iv, value] : llvm::zip(loop.getInductionVars(), ivs))
      mapping.map(iv, value);
    for (Operation &op : loop.getBody()->without_terminator())
      ib.clone(op, mapping);
    kb.setInsertionPointToEnd(&launch.getBody().front());
    gpu::TerminatorOp::create(kb, loc);
    loop.erase();
    return success();
  }
};

} // namespace
