//===- Pipelines.cpp - The rnn-optimize pipeline and pass registration ----===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace rnn {

namespace {
#define GEN_PASS_REGISTRATION
#include "rnn/Dialect/RNN/Transforms/Passes.h.inc"
} // namespace

void buildOptimizePipeline(OpPassManager &pm,
                           const OptimizePipelineOptions &options) {
  // Canonicalisation first folds what the cell spells out redundantly, so
  // that each pass sees the simplest form; CSE merges the weight packing of
  // scans that share parameters.
  pm.addPass(createCanonicalizerPass());
  // Before the concatenation, which then merges the carried product's
  // matmul with the projection that reads the same rows.
  if (options.carryRecurrentProducts)
    pm.addPass(createCarryRecurrentProducts());
  // Before the gate concatenation, which then merges the products of the
  // gates that read the same concatenated operands.
  if (options.concatSummedMatmuls)
    pm.addPass(createConcatSummedMatmuls());
  if (options.concatGateMatmuls)
    pm.addPass(createConcatGateMatmuls());
  if (options.hoistInputProjection) {
    pm.addPass(createHoistInputProjection());
    pm.addPass(createAccumulateIntoProjection());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.fusePointwise) {
    // Before the fusion, which the casts it moves into the cells join.
    pm.addPass(createNarrowScanOutputs());
    pm.addPass(createCarryCastStates());
    // After the casts are carried, so that a cast of a state alone stays
    // theirs and this pass takes what else a matmul reads of the states.
    if (options.carryStatePointwise)
      pm.addPass(createCarryStatePointwise());
    pm.addPass(createFusePointwise());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void registerTransformsPasses() {
  registerRNNPasses();
  PassPipelineRegistration<OptimizePipelineOptions>(
      "rnn-optimize",
      "Concatenate gate matmuls, hoist input projections out of the time "
      "loop, fuse each stage's pointwise ops",
      buildOptimizePipeline);
}

} // namespace rnn
