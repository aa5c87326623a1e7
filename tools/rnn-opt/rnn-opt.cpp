//===- rnn-opt.cpp - The rnn optimizer driver -----------------------------===//
//
// mlir-opt for the rnn dialect: parses, verifies, runs passes and prints.
// It registers what rnn-compile uses and nothing else: the rnn dialect and
// passes, the dialects and passes of the lowering, and the pipelines
// rnn-optimize and rnn-lower-to-llvm-cpu, so that every stage of a
// compilation can be reproduced and tested here.
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Compiler.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  rnn::registerCompilerDialects(registry);
  rnn::registerCompilerPasses();
  mlir::PassPipelineRegistration<>(
      "rnn-bufferize",
      "Lower optimised rnn IR to buffers, in place (the part of the lowering "
      "that rnn-compile runs for both targets before the GEMMs)",
      [](mlir::OpPassManager &pm) {
        if (mlir::failed(
                mlir::parsePassPipeline(rnn::bufferizationPipeline(), pm)))
          llvm::report_fatal_error("the bufferization pipeline does not parse");
      });
  mlir::PassPipelineRegistration<>(
      "rnn-lower-to-llvm-cpu",
      "Lower optimised rnn IR to the LLVM dialect for the CPU (what "
      "rnn-compile --target=cpu runs after rnn-optimize)",
      [](mlir::OpPassManager &pm) {
        if (mlir::failed(
                mlir::parsePassPipeline(rnn::cpuLoweringPipeline(), pm)))
          llvm::report_fatal_error("the CPU lowering pipeline does not parse");
      });

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "rnn optimizer driver\n", registry));
}
