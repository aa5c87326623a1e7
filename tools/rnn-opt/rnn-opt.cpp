//===- rnn-opt.cpp - The rnn optimizer driver -----------------------------===//
//
// mlir-opt for the rnn dialect: parses, verifies, runs passes and prints.
// It registers the rnn dialect, the dialects a model function around the
// cells uses (func, arith, tensor; math for fused bodies), the rnn passes and
// pipelines, and only the generic passes those run, so that it stays small.
//
//===----------------------------------------------------------------------===//

#include "rnn/Conversion/Passes.h"
#include "rnn/Dialect/RNN/IR/RNNDialect.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<rnn::RNNDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect,
                  mlir::scf::SCFDialect, mlir::memref::MemRefDialect>();

  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  rnn::registerTransformsPasses();
  rnn::registerRNNConversionPasses();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "rnn optimizer driver\n", registry));
}
