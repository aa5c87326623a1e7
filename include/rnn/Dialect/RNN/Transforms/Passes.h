//===- Passes.h - Rewrite passes of the rnn dialect -------------*- C++ -*-===//

#ifndef RNN_DIALECT_RNN_TRANSFORMS_PASSES_H
#define RNN_DIALECT_RNN_TRANSFORMS_PASSES_H

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace rnn {

#define GEN_PASS_DECL
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"

/// On a layer wavefront's loop over chunks (rnn-layer-wavefront): how long
/// its chunks are, in words, for `rnn-compile --explain`.
constexpr llvm::StringLiteral kWavefrontChunkAttr = "rnn.wavefront_chunk";

/// Options of the `rnn-optimize` pipeline.
struct OptimizePipelineOptions
    : public mlir::PassPipelineOptions<OptimizePipelineOptions> {
  Option<bool> carryRecurrentProducts{
      *this, "carry-recurrent-products",
      llvm::cl::desc("Carry U·s instead of a projected state s read only "
                     "through matmuls (LSTM with projection)"),
      llvm::cl::init(true)};
  Option<bool> concatSummedMatmuls{
      *this, "concat-summed-matmuls",
      llvm::cl::desc("Merge matmuls with different left operands that feed "
                     "one sum into one over the operands concatenated along "
                     "K"),
      llvm::cl::init(true)};
  Option<bool> concatGateMatmuls{
      *this, "concat-gate-matmuls",
      llvm::cl::desc("Merge matmuls that share a left operand"),
      llvm::cl::init(true)};
  Option<bool> hoistInputProjection{
      *this, "hoist-input-projection",
      llvm::cl::desc("Move input projections out of the time loop and let "
                     "the recurrent matmul accumulate onto them"),
      llvm::cl::init(true)};
  Option<bool> carryStatePointwise{
      *this, "carry-state-pointwise",
      llvm::cl::desc("Carry a pointwise function of the states that a matmul "
                     "reads as a state of its own (needs fuse-pointwise)"),
      llvm::cl::init(true)};
  Option<bool> fusePointwise{
      *this, "fuse-pointwise",
      llvm::cl::desc("Fuse each stage's pointwise ops into one rnn.pointwise"),
      llvm::cl::init(true)};
};

/// Adds the `rnn-optimize` passes to `pm` (which runs on a module):
/// carry-recurrent-products, concat-gate-matmuls, hoist-input-projection,
/// fuse-pointwise, with canonicalisation and CSE between them.
void buildOptimizePipeline(mlir::OpPassManager &pm,
                           const OptimizePipelineOptions &options);

/// Registers the passes and the `rnn-optimize` pipeline with the global
/// registry (for rnn-opt and other tools).
void registerTransformsPasses();

} // namespace rnn

#endif // RNN_DIALECT_RNN_TRANSFORMS_PASSES_H
