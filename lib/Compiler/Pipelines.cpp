//===- Pipelines.cpp - Dialects, passes and the lowering pipelines
//---------===//

#include "rnn/Compiler/Compiler.h"
#include "rnn/Conversion/Passes.h"
#include "rnn/Dialect/RNN/IR/RNNDialect.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace rnn {

void registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<RNNDialect, affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, LLVM::LLVMDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect,
                  gpu::GPUDialect, NVVM::NVVMDialect, ub::UBDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  // Offsets and sizes for the disjointness proofs of elide-buffer-copies.
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
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
  // The CUDA backend: kernels serialised for NVVM, gpu.binary translated to
  // a module load, and every dialect's conversion to LLVM for gpu-to-llvm.
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  gpu::registerConvertGpuToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
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
  arith::registerArithPasses();
  registerGPUPasses();
  gpu::registerGPUToNVVMPipeline();
}

std::string bufferizationPipeline() {
  // Tensors to buffers with identity layouts at function boundaries (the
  // runtime passes dense row-major buffers), results written into
  // caller-provided buffers, states and sequences updated in place, no
  // copy that a reader can do without, and no allocation per time step.
  return "convert-rnn-to-linalg,canonicalize,cse,split-shared-fills,"
         "eliminate-empty-tensors,"
         "one-shot-bufferize{bufferize-function-boundaries "
         "function-boundary-type-conversion=identity-layout-map "
         "allow-return-allocs-from-loops},"
         // A result that a loop carries unchanged is its initial buffer;
         // once canonicalisation says so, the buffer a result is computed in
         // becomes the caller's: no final copy.
         "canonicalize,"
         "buffer-results-to-out-params{modify-public-functions},"
         "compute-results-in-place,canonicalize,"
         // The runtime passes results that overlap no argument and no
         // other result (rnn_model_run checks), and arguments are never
         // written.
         "elide-buffer-copies{distinct-arguments},"
         "buffer-deallocation-pipeline,func.func(optimize-allocation-liveness),"
         "hoist-loop-allocations";
}

std::string cpuLoweringPipeline(unsigned kPartials) {
  // Matmuls to the library GEMM; then loops and the LLVM dialect. rsqrt is
  // expanded and tanh goes to libm.
  // Head-wise products as one batched call per gate (a BLAS call per head).
  // A layer wavefront's lanes run in order.
  return bufferizationPipeline() +
         ",convert-lanes-to-runtime-calls{streams=false},"
         "convert-matmul-to-library-gemm{function=rnn_cpu_gemm "
         "batched-function=rnn_cpu_gemm_batched "
         "partials-function=rnn_cpu_gemm_partials k-partials=" +
         std::to_string(kPartials) +
         "},"
         "func.func(convert-linalg-to-loops),"
         // A function per time loop, identical loops sharing one: LLVM took
         // time growing faster than a function that held every scan of a
         // stack (8-layer bidirectional LayerNorm LSTM 22.1 -> 2.9 s,
         // docs/performance-notes.md).
         "outline-loops,"
         "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
         "math-expand-ops{ops=rsqrt},convert-math-to-libm,convert-math-to-llvm,"
         // bf16 arithmetic in f32 between conversions, and the conversions
         // as integer arithmetic, inline: x86 has no bf16 arithmetic, and
         // LLVM would round each result with a call of __truncsfbf2 (which
         // the runtime provides for the bf16 values LLVM still rounds in
         // registers, Bf16Rounding.cpp).
         "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32},"
         "arith-expand{include-bf16},"
         // Allocations through the runtime, which ends a call whose
         // allocation fails with a status (ModelAllocations.h).
         "finalize-memref-to-llvm{use-generic-functions},convert-func-to-llvm,"
         "convert-arith-to-llvm,"
         "convert-cf-to-llvm,convert-index-to-llvm,"
         "reconcile-unrealized-casts";
}

/// Programmatic dependent launch (griddepcontrol) needs sm_90 or later.
static bool supportsDependentLaunch(llvm::StringRef chip) {
  unsigned version = 0;
  llvm::StringRef digits = chip;
  if (!digits.consume_front("sm_"))
    return false;
  digits = digits.take_while(llvm::isDigit);
  return !digits.getAsInteger(10, version) && version >= 90;
}

/// The most blocks of a cluster a block kernel may spread a head over on
/// `chip`: clusters (and distributed shared memory) need sm_90; 8 is the
/// portable cluster size, and sm_90 (the H100, H200) runs 16 where the
/// kernel allows a non-portable size (the runtime does).
int64_t maxBlockKernelCluster(llvm::StringRef chip) {
  if (chip.starts_with("sm_90"))
    return 16;
  return supportsDependentLaunch(chip) ? 8 : 1;
}

/// The persistent kernels' device library is built for Hopper (sm_90a):
/// clusters, bulk copies multicast within a cluster, mbarrier waits.
bool runsPersistentKernels(llvm::StringRef chip) {
  return chip.starts_with("sm_90");
}

/// The dynamic shared memory one block may opt into on `chip` (CUDA's
/// per-architecture limits), for the block kernels' weights.
int64_t maxDynamicSharedBytes(llvm::StringRef chip) {
  unsigned version = 0;
  llvm::StringRef digits = chip;
  if (!digits.consume_front("sm_") ||
      digits.take_while(llvm::isDigit).getAsInteger(10, version))
    return 48 * 1024;
  switch (version) {
  case 80:
  case 87:
    return 163 * 1024;
  case 86:
  case 89:
    return 99 * 1024;
  case 70:
  case 72:
    return 96 * 1024;
  case 75:
    return 64 * 1024;
  default:
    return version >= 90 ? 227 * 1024 : 48 * 1024;
  }
}

/// MLIR 22's gpu-lower-to-nvvm-pipeline, spelled out so that the kernels can
/// link LLVM bitcode (nvvm-attach-target's `l`), which the pipeline's
/// options cannot pass. PTX 8.1 (drivers of CUDA 12.1 on) lets a kernel take
/// more than 4 KiB of parameters: a fused group reads and writes many
/// buffers (the LayerNorm LSTM's backward group takes 4.3 KiB).
static std::string nvvmPipeline(llvm::StringRef chip,
                                llvm::StringRef linkedBitcode,
                                llvm::StringRef binaryFormat) {
  std::string link = linkedBitcode.empty() ? "" : (" l=" + linkedBitcode).str();
  return "convert-nvgpu-to-nvvm,gpu-kernel-outlining,convert-vector-to-scf,"
         "convert-scf-to-cf,convert-nvvm-to-llvm,convert-func-to-llvm,"
         "expand-strided-metadata,"
         "nvvm-attach-target{O=3 chip=" +
         chip.str() + " features=+ptx81" + link +
         "},"
         "lower-affine,convert-arith-to-llvm,"
         "convert-index-to-llvm{index-bitwidth=64},canonicalize,cse,"
         "gpu.module(convert-gpu-to-nvvm{index-bitwidth=64},canonicalize,cse,"
         "reconcile-unrealized-casts),"
         "gpu-to-llvm,gpu-module-to-binary{format=" +
         binaryFormat.str() +
         "},"
         "convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts";
}

std::string cudaLoweringPipeline(llvm::StringRef chip, unsigned kPartials,
                                 llvm::StringRef deviceLibrary,
                                 llvm::StringRef binaryFormat,
                                 bool blockKernels) {
  bool persistent = !deviceLibrary.empty() && runsPersistentKernels(chip);
  // As on the CPU up to the GEMMs, which go to cuBLAS; then buffers live on
  // the device, every remaining loop nest becomes one kernel, and the NVVM
  // pipeline outlines, compiles (ptxas) and embeds the kernels as a fatbin.
  return bufferizationPipeline() + "," +
         // A layer wavefront's lanes on streams of their own, joined after
         // their loop (rnn-layer-wavefront).
         "convert-lanes-to-runtime-calls," +
         // Small recurrences (a head's weights in one block's shared
         // memory) as one kernel of independent blocks, their step loops
         // kept for large batches (docs/persistent-recurrences.md).
         (blockKernels
              ? "convert-step-loops-to-block-kernels{max-shared-bytes=" +
                    std::to_string(maxDynamicSharedBytes(chip)) +
                    " max-cluster-size=" +
                    std::to_string(maxBlockKernelCluster(chip)) +
                    (persistent ? " grid-kernels" : "") + "},"
              : std::string()) +
         // Eligible recurrences as one kernel each, their step loops kept as
         // the fallback (docs/persistent-recurrences.md).
         (persistent ? "convert-step-loops-to-persistent-kernels," : "") +
         // K-split partials added by the step's kernel: the two-stage cells'
         // [64 x 1024] x [1024 x N] products, MGU 15.7 -> 13.1 us per step
         // (H100, docs/performance-notes.md).
         // Head-wise products: a strided-batched GEMM per gate over the
         // heads.
         "convert-matmul-to-library-gemm{function=rnn_cuda_gemm "
         "batched-function=rnn_cuda_gemm_batched tf32-flag "
         "constant-b-flag per-step-flag k-partials=" +
         std::to_string(kPartials) +
         "},"
         // 256 threads per row's block: since the kernels keep columns in
         // registers and load early, the LayerNorm LSTM at `medium` took
         // 1.388 ms with 256 against 1.463 with 512, 1.571 with 128 and
         // 1.887 with 1024 (H100, in one process; docs/performance-notes.md).
         // Distinct arguments: rnn_model_run refuses results that overlap
         // an argument or another result, and arguments are never written.
         "convert-buffers-to-gpu,convert-row-groups-to-kernels{block-size=256 "
         "distinct-arguments},"
         "convert-row-reductions-to-kernels,"
         "func.func(convert-linalg-to-parallel-loops),"
         "convert-parallel-loops-to-kernels,canonicalize,cse,"
         // Constants and sizes back into the kernels (canonicalisation
         // hoisted them): kernels divide by constants, not by arguments.
         "sink-views-into-kernels,gpu-launch-sink-index-computations," +
         (supportsDependentLaunch(chip) ? "overlap-kernel-launches," : "") +
         // As on the CPU; the kernels of identical loops are compiled once
         // (8-layer bidirectional LayerNorm LSTM 21.3 -> 11.0 s).
         "outline-loops," +
         nvvmPipeline(chip, persistent ? deviceLibrary : "", binaryFormat);
}

} // namespace rnn
