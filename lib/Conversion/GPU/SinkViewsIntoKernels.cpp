//===- SinkViewsIntoKernels.cpp - Kernels take whole buffers --------------===//
//
// A kernel outlined from a gpu.launch takes every memref it uses from above
// as a full descriptor (pointers, offset, sizes, strides): a fused LSTM step
// that reads four gate windows of one buffer and four slices of each bias
// passes dozens of descriptors, kilobytes of parameters copied with every
// launch. Views cost nothing to recompute, so they are built inside the
// kernel from the buffer they look into, and the kernel takes that buffer
// (and the view's dynamic offsets) once.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace rnn {
#define GEN_PASS_DEF_SINKVIEWSINTOKERNELS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// A constant global's buffer (a constant tensor of the model, e.g. a
/// scalar that no fused group absorbed). Taken inside the kernel, it is the
/// copy that kernel outlining puts into the GPU module, in device memory;
/// taken outside, the kernel would read the host's copy.
bool isConstantGlobal(Operation *op) {
  auto get = dyn_cast<memref::GetGlobalOp>(op);
  if (!get)
    return false;
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      op, get.getNameAttr());
  return global && global.getConstant();
}

/// Views, the constants they are built from, and constant globals. (Sizes
/// stay outside: a size read inside would make the kernel take the whole
/// buffer it is read from for one index.)
bool isCheapToRebuild(Operation *op) {
  return isa<memref::SubViewOp, memref::CastOp, memref::ReinterpretCastOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp>(op) ||
         matchPattern(op, m_Constant()) || isConstantGlobal(op);
}

/// Rebuilds inside `launch` every cheap op whose result it uses from above,
/// with the cheap ops that op's operands come from. Unlike MLIR's
/// sinkOperationsIntoLaunchOp, this may add kernel arguments: a view's
/// source buffer and offsets replace the view itself.
void sinkViews(gpu::LaunchOp launch) {
  Region &body = launch.getBody();
  OpBuilder b = OpBuilder::atBlockBegin(&body.front());
  IRMapping mapping;
  SmallVector<Operation *> sunk;
  std::function<Value(Value)> rebuild = [&](Value value) -> Value {
    if (Value rebuilt = mapping.lookupOrNull(value))
      return rebuilt;
    Operation *def = value.getDefiningOp();
    if (!def || !isCheapToRebuild(def))
      return value;
    for (Value operand : def->getOperands())
      rebuild(operand);
    Operation *clone = b.clone(*def, mapping);
    sunk.push_back(def);
    for (auto [original, copy] :
         llvm::zip(def->getResults(), clone->getResults()))
      mapping.map(original, copy);
    return mapping.lookup(value);
  };
  SetVector<Value> above;
  getUsedValuesDefinedAbove(body, above);
  for (Value value : above)
    if (Value rebuilt = rebuild(value); rebuilt != value)
      replaceAllUsesInRegionWith(value, rebuilt, body);
  // The originals that nothing else uses any more go (users first).
  for (Operation *op : llvm::reverse(sunk))
    if (op->use_empty())
      op->erase();
}

struct SinkViewsIntoKernelsPass
    : public rnn::impl::SinkViewsIntoKernelsBase<SinkViewsIntoKernelsPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::LaunchOp launch) { sinkViews(launch); });
  }
};

} // namespace
