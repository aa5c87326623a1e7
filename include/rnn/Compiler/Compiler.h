//===- Compiler.h - From rnn IR to a shared library -------------*- C++ -*-===//
//
// The stages of rnn-compile, usable from other tools: optimise, lower to the
// LLVM dialect, add the entry points and manifest the runtime reads, emit an
// object with LLVM's TargetMachine, link a shared library.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_COMPILER_COMPILER_H
#define RNN_COMPILER_COMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace rnn {

/// Registers every dialect, interface and translation that compilation
/// needs.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Registers the upstream passes and pipelines the lowering is written in
/// (so that the pipeline can also be run by name from rnn-opt).
void registerCompilerPasses();

/// The passes that both targets run after rnn-optimize to get from tensors
/// to buffers (rnn-opt registers it as `rnn-bufferize`); the same form as
/// cpuLoweringPipeline().
std::string bufferizationPipeline();

/// The textual pass pipeline that lowers optimised rnn IR to the LLVM
/// dialect on the CPU: the passes of a module pass manager, without the
/// `builtin.module(...)` around them. `kPartials` > 1 splits recurrent
/// products into K-slice partials as the CUDA pipeline does (no faster on
/// the CPU: it lets the CPU check the rewrite).
std::string cpuLoweringPipeline(unsigned kPartials = 0);

/// Checks that the device library at `path` (rnn_device_library.bc) defines
/// the persistent kernels' entry points with the types the compiler calls
/// them with (include/rnn/DeviceLibrary/PersistentRecurrence.h): a library
/// from another version of the compiler fails here, naming the entry point
/// and both types, instead of linking calls that never inline.
llvm::Error checkDeviceLibrary(llvm::StringRef path);

/// The default of cudaLoweringPipeline's `kPartials`.
constexpr unsigned kCudaKPartials = 8;

/// The textual pass pipeline that lowers optimised rnn IR to the LLVM
/// dialect with CUDA kernels for `chip` (e.g. sm_90a) and cuBLAS GEMMs; the
/// same form as cpuLoweringPipeline(). `kPartials`: K slices for the
/// recurrent products that qualify (convert-matmul-to-library-gemm; 0 or 1:
/// none). `deviceLibrary`: the bitcode of lib/DeviceLibrary
/// (rnn_device_library.bc); given, and for sm_90 chips, eligible
/// recurrences become persistent kernels that link it
/// (convert-step-loops-to-persistent-kernels). `binaryFormat`: what
/// gpu-module-to-binary embeds (fatbin: SASS plus PTX; isa: the PTX text,
/// for inspection). `blockKernels`: small recurrences become kernels of one
/// block per (head, batch row) (convert-step-loops-to-block-kernels).
std::string cudaLoweringPipeline(llvm::StringRef chip,
                                 unsigned kPartials = kCudaKPartials,
                                 llvm::StringRef deviceLibrary = "",
                                 llvm::StringRef binaryFormat = "fatbin",
                                 bool blockKernels = true);

/// The dynamic shared memory one block may opt into on `chip` (what the
/// block kernels may hold there).
int64_t maxDynamicSharedBytes(llvm::StringRef chip);
/// The most blocks of a cluster over which a block kernel may spread a
/// head on `chip` (1 where there are no clusters).
int64_t maxBlockKernelCluster(llvm::StringRef chip);
/// Whether `chip` runs the device library's grid-wide persistent kernels
/// (sm_90: clusters, multicast bulk copies, mbarriers).
bool runsPersistentKernels(llvm::StringRef chip);

/// The manifest that tells the runtime each public function's signature
/// (see docs/runtime.md), computed from the rnn-level module: dynamic sizes
/// that the verifiers force equal share one symbol.
mlir::FailureOr<std::string> buildManifest(mlir::ModuleOp module);

/// Adds, to a module lowered to the LLVM dialect, the `rnn_manifest` and
/// `rnn_target` ("cpu" or "cuda") globals and one `rnn_call_<name>(void **)`
/// entry per public function.
mlir::LogicalResult addEntryPoints(mlir::ModuleOp module,
                                   llvm::StringRef manifest,
                                   llvm::ArrayRef<std::string> functions,
                                   llvm::StringRef target);

/// Moves every stack slot used only within its own block (the argument
/// slots that MLIR's `gpu.launch_func` translation places at each kernel
/// launch, and `memref.dim`'s) to the function's entry block, so that a
/// launch in a loop does not grow the stack on every iteration.
void hoistKernelArgumentAllocas(llvm::Module &module);

/// Translates an LLVM-dialect module to LLVM IR and writes an object file
/// for the host (optimisation level 0-3).
mlir::LogicalResult emitObject(mlir::ModuleOp module, llvm::StringRef path,
                               unsigned optLevel, bool emitLLVMIR);

/// Links `object` into the shared library `output` against librnn_runtime
/// (and, for CUDA models, librnn_runtime_cuda) in `runtimeDir`.
llvm::Error linkSharedLibrary(llvm::StringRef object, llvm::StringRef output,
                              llvm::StringRef runtimeDir, bool cuda);

} // namespace rnn

#endif // RNN_COMPILER_COMPILER_H
