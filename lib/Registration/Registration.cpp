//===- Registration.cpp - Registering rnn in another MLIR tool ------------===//

#include "rnn/Registration.h"

#include "rnn/Conversion/Passes.h"
#include "rnn/Dialect/RNN/IR/RNNDialect.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

void rnn::registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<rnn::RNNDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
}

void rnn::registerPasses() {
  registerTransformsPasses();
  registerRNNConversionPasses();
}
