//===- consumer-opt.cpp - An *-opt tool of another project ----------------===//
//
// Registers rnn (rnn/Registration.h) next to an upstream dialect that rnn
// does not use (index), and a pipeline of its own that runs rnn-optimize
// among upstream passes.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/Transforms/Passes.h"
#include "rnn/Registration.h"

#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  rnn::registerDialects(registry);
  registry.insert<mlir::index::IndexDialect>();
  rnn::registerPasses();
  mlir::registerSymbolDCEPass();
  mlir::PassPipelineRegistration<>(
      "consumer-pipeline", "rnn-optimize, then the project's own cleanup",
      [](mlir::OpPassManager &pm) {
        rnn::buildOptimizePipeline(pm, rnn::OptimizePipelineOptions());
        pm.addPass(mlir::createSymbolDCEPass());
      });
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "consumer optimizer\n", registry));
}
