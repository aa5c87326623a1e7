//===- LoopDestinations.cpp - States updated in their own buffers ---------===//
//
// A state computed by a linalg op from `tensor.empty` gets a fresh buffer
// every step once bufferized. Writing the new state into the loop-carried
// tensor instead lets bufferization update it in place (a stream-ordered
// allocation and free less per step on the GPU), and bufferization still
// copies wherever the old value is read after the write.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace rnn {
namespace lowering {

/// The DPS init of the linalg op producing `value` (seen through a
/// tensor.cast) when it is an unread tensor.empty; null otherwise.
static OpOperand *replaceableEmptyInit(Value value) {
  if (auto cast = value.getDefiningOp<tensor::CastOp>())
    value = cast.getSource();
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return nullptr;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(result.getOwner());
  if (!linalgOp)
    return nullptr;
  OpOperand *init = linalgOp.getDpsInitOperand(result.getResultNumber());
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      linalgOp.payloadUsesValueFromOperand(init))
    return nullptr;
  return init;
}

void reuseLoopCarriedDestinations(Operation *root) {
  root->walk([](scf::ForOp loop) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [carried, next] :
         llvm::zip(loop.getRegionIterArgs(), yield.getResults())) {
      OpOperand *init = replaceableEmptyInit(next);
      if (!init)
        continue;
      Type initType = init->get().getType();
      if (!tensor::CastOp::areCastCompatible(carried.getType(), initType))
        continue;
      OpBuilder b(init->getOwner());
      Value destination = carried;
      if (carried.getType() != initType)
        destination =
            tensor::CastOp::create(b, loop.getLoc(), initType, carried);
      init->set(destination);
    }
  });
}

void markArgumentsReadOnly(Operation *root) {
  // The C ABI's inputs belong to the caller: a loop that starts from an
  // argument must not update it in place.
  root->walk([](func::FuncOp func) {
    if (func.isExternal())
      return;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (isa<TensorType>(func.getArgument(i).getType()))
        func.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(func.getContext(), false));
  });
}

} // namespace lowering
} // namespace rnn
