//===- GuardedLaunch.h - A 1-D kernel launch skipped when empty -*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_GPU_GUARDEDLAUNCH_H
#define RNN_LIB_CONVERSION_GPU_GUARDEDLAUNCH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace rnn {

/// A gpu.launch of `grid` x 1 x 1 blocks of `block` x 1 x 1 threads at
/// `b`'s insertion point, inside an scf.if that skips it when `work` (the
/// number of items the kernel covers) is 0: a launch with an empty grid is
/// an error. `b` is left after the guard. `workgroupMemory` lists the
/// kernel's shared-memory buffers.
inline mlir::gpu::LaunchOp
createGuardedLaunch(mlir::OpBuilder &b, mlir::Location loc, mlir::Value work,
                    mlir::Value grid, mlir::Value block,
                    mlir::TypeRange workgroupMemory = {}) {
  using namespace mlir;
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, work,
                            arith::ConstantIndexOp::create(b, loc, 0));
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  OpBuilder::InsertionGuard restore(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return gpu::LaunchOp::create(b, loc, grid, one, one, block, one, one,
                               /*dynamicSharedMemorySize=*/nullptr,
                               /*asyncTokenType=*/nullptr,
                               /*asyncDependencies=*/{}, workgroupMemory);
}

} // namespace rnn

#endif // RNN_LIB_CONVERSION_GPU_GUARDEDLAUNCH_H
