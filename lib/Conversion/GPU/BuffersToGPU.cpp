//===- BuffersToGPU.cpp - Device memory for a lowered model ---------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTBUFFERSTOGPU
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// Whether the buffer `op` allocates, frees or copies holds model data. The
/// ownership-based deallocation keeps its own bookkeeping in small host
/// buffers of `index` (addresses) and `i1` (ownership flags) that host code
/// reads and writes; those stay in host memory. Model data is never of
/// these types.
static bool holdsData(Operation *op) {
  Value buffer = op->getNumResults() ? op->getResult(0) : op->getOperand(0);
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return !element.isIndex() && !element.isInteger(1);
}

struct ConvertBuffersToGPUPass
    : public rnn::impl::ConvertBuffersToGPUBase<ConvertBuffersToGPUPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op) &&
          !op->getParentOfType<gpu::GPUModuleOp>() && holdsData(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      // gpu-to-llvm lowers device allocation only in its stream-ordered
      // (async) form: each one gets a token of its own and is waited for at
      // once. The runtime maps these streams to the caller's stream and makes
      // the waits free, so allocation stays ordered with the kernels and
      // never blocks the host.
      Type token = gpu::AsyncTokenType::get(b.getContext());
      Value start =
          gpu::WaitOp::create(b, loc, token, ValueRange()).getAsyncToken();
      Value done;
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto device = gpu::AllocOp::create(
            b, loc, alloc.getType(), token, ValueRange{start},
            alloc.getDynamicSizes(), alloc.getSymbolOperands(),
            /*hostShared=*/false);
        alloc.getResult().replaceAllUsesWith(device.getMemref());
        done = device.getAsyncToken();
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        done = gpu::DeallocOp::create(b, loc, token, ValueRange{start},
                                      dealloc.getMemref())
                   .getAsyncToken();
      }
      if (done)
        gpu::WaitOp::create(b, loc, Type(), ValueRange{done});
      else
        start.getDefiningOp()->erase();
      if (auto copy = dyn_cast<memref::CopyOp>(op))
        linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
      op->erase();
    }
  }
};

} // namespace
