//===- BuffersToGPU.cpp - Device memory for a lowered model ---------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

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

/// Whether host code takes the address of `buffer` (or of a view of it) to
/// hand it to a library call (a GEMM's operand): the library reads it on the
/// device.
static bool addressTakenByHost(Value buffer) {
  for (Operation *user : buffer.getUsers()) {
    if (isa<memref::ExtractAlignedPointerAsIndexOp>(user))
      return true;
    if (auto view = dyn_cast<ViewLikeOpInterface>(user))
      if (view.getViewSource() == buffer &&
          addressTakenByHost(user->getResult(0)))
        return true;
  }
  return false;
}

/// A constant tensor of the model (always a splat: `rnn.constant`) is a
/// constant global in host memory. A kernel that reads it takes the copy
/// that kernel outlining puts into its GPU module (sink-views-into-kernels
/// moves the read inside); a library call cannot, so a global whose address
/// host code passes on becomes a device buffer filled with the splat value
/// (one fill per call, freed at every return).
static LogicalResult materializeConstantOnDevice(memref::GetGlobalOp get) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  if (!global || !global.getConstant())
    return success();
  auto init =
      dyn_cast_or_null<SplatElementsAttr>(global.getConstantInitValue());
  auto func = get->getParentOfType<func::FuncOp>();
  if (!init || !func)
    return get.emitOpError("a non-splat constant global that a library call "
                           "reads cannot be placed in device memory");
  OpBuilder b(get);
  Location loc = get.getLoc();
  MemRefType type = get.getType();
  Value buffer = memref::AllocOp::create(b, loc, type);
  Value value =
      arith::ConstantOp::create(b, loc, init.getSplatValue<TypedAttr>());
  linalg::FillOp::create(b, loc, value, buffer);
  func.walk([&](func::ReturnOp ret) {
    OpBuilder atReturn(ret);
    memref::DeallocOp::create(atReturn, ret.getLoc(), buffer);
  });
  get.getResult().replaceAllUsesWith(buffer);
  get.erase();
  return success();
}

struct ConvertBuffersToGPUPass
    : public rnn::impl::ConvertBuffersToGPUBase<ConvertBuffersToGPUPass> {
  void runOnOperation() override {
    SmallVector<memref::GetGlobalOp> libraryConstants;
    getOperation().walk([&](memref::GetGlobalOp get) {
      if (!get->getParentOfType<gpu::GPUModuleOp>() &&
          addressTakenByHost(get.getResult()))
        libraryConstants.push_back(get);
    });
    for (memref::GetGlobalOp get : libraryConstants)
      if (failed(materializeConstantOnDevice(get)))
        return signalPassFailure();

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
