//===- CpuPipeline.cpp - Dialects, passes and the CPU lowering ------------===//

#include "rnn/Compiler/Compiler.h"
#include "rnn/Conversion/Passes.h"
#include "rnn/Dialect/RNN/IR/RNNDialect.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace rnn {

void registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<RNNDialect, affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, LLVM::LLVMDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void registerCompilerPasses() {
  registerTransformsPasses();
  registerRNNConversionPasses();
  registerConversionPasses();
  bufferization::registerBufferizationPasses();
  bufferization::registerBufferizationPipelines();
  registerLinalgPasses();
  math::registerMathPasses();
  memref::registerMemRefPasses();
  registerCanonicalizerPass();
  registerCSEPass();
}

std::string cpuLoweringPipeline() {
  // Tensors to buffers with identity layouts at function boundaries (the
  // runtime passes dense row-major buffers) and results written into
  // caller-provided buffers; matmuls to the library GEMM; then loops and
  // the LLVM dialect. rsqrt is expanded and tanh goes to libm.
  return "convert-rnn-to-linalg,canonicalize,cse,"
         "one-shot-bufferize{bufferize-function-boundaries "
         "function-boundary-type-conversion=identity-layout-map "
         "allow-return-allocs-from-loops},"
         "buffer-results-to-out-params{modify-public-functions},"
         "buffer-deallocation-pipeline,"
         "convert-matmul-to-library-gemm{function=rnn_cpu_gemm},"
         "func.func(convert-linalg-to-loops),"
         "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
         "math-expand-ops{ops=rsqrt},convert-math-to-libm,convert-math-to-llvm,"
         "finalize-memref-to-llvm,convert-func-to-llvm,convert-arith-to-llvm,"
         "convert-cf-to-llvm,convert-index-to-llvm,"
         "reconcile-unrealized-casts";
}

} // namespace rnn
