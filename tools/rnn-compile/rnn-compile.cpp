//===- rnn-compile.cpp - rnn IR to a shared library -----------------------===//
//
//   rnn-compile [--target=cpu|cuda] [--gpu-chip=sm_90a]
//               [--emit=mlir|llvm|obj|so] [--no-optimize] [-O0..3]
//               [--matmul-type=f32|bf16|f16|tf32] [--explain]
//               model.mlir -o model.so
//
// Runs rnn-optimize (unless --no-optimize), lowers to the LLVM dialect (for
// the CPU, or with CUDA kernels embedded as a fatbin and cuBLAS GEMMs),
// emits an object with LLVM's TargetMachine in process and links a shared
// library against librnn_runtime (and librnn_runtime_cuda). Every failure is
// a message and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Compiler.h"
#include "rnn/Compiler/Explain.h"
#include "rnn/DeviceLibrary/PersistentRecurrence.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum class Emit { MLIR, LLVM, Obj, SO };
enum class Target { CPU, CUDA };
} // namespace

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"),
                                      cl::init("-"));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("path"));
static cl::opt<Target> target(
    "target", cl::desc("Code generation target"), cl::init(Target::CPU),
    cl::values(clEnumValN(Target::CPU, "cpu", "the host CPU (OpenBLAS GEMM)"),
               clEnumValN(Target::CUDA, "cuda", "NVIDIA GPUs")));
static cl::opt<Emit>
    emit("emit", cl::desc("The stage to stop at"), cl::init(Emit::SO),
         cl::values(clEnumValN(Emit::MLIR, "mlir", "MLIR in the LLVM dialect"),
                    clEnumValN(Emit::LLVM, "llvm", "LLVM IR"),
                    clEnumValN(Emit::Obj, "obj", "an object file"),
                    clEnumValN(Emit::SO, "so", "a shared library (default)")));
static cl::opt<std::string> matmulType(
    "matmul-type",
    cl::desc("Operand type of every f32 matmul: f32 (default), or bf16 / "
             "f16 with f32 accumulation (states and pointwise math stay "
             "f32), or tf32 (f32 operands, TF32 products on CUDA)"),
    cl::init("f32"));
static cl::opt<bool> noOptimize("no-optimize",
                                cl::desc("Skip the rnn-optimize pipeline"),
                                cl::init(false));
static cl::opt<std::string> optimizeOptions(
    "optimize-options",
    cl::desc("Options of the rnn-optimize pipeline, as rnn-opt takes them "
             "(e.g. \"concat-summed-matmuls=false carry-state-pointwise="
             "false\"): to see what a rewrite does to a model, or time it "
             "without"),
    cl::value_desc("options"), cl::init(""));
static cl::opt<bool>
    training("training",
             cl::desc("Also compile, for every public function f, its training "
                      "forward f_train and its backward f_backward "
                      "(docs/training.md)"),
             cl::init(false));
static cl::opt<std::string>
    savePolicy("save",
               cl::desc("With --training: what the training forward saves per "
                        "step, gates (default) or states (recompute the rest)"),
               cl::init("gates"));
static cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level"),
                                  cl::Prefix, cl::init(2));
static cl::opt<std::string>
    gpuChip("gpu-chip",
            cl::desc("CUDA architecture of the kernels (--target=cuda)"),
            cl::init("sm_90a"));
static cl::opt<int> kPartials(
    "k-partials",
    cl::desc("Split qualifying recurrent products into this many K slices "
             "that the consumer adds up (default: 8 for CUDA, where it is "
             "faster; 0 for the CPU, where it only checks the rewrite)"),
    cl::init(-1));
static cl::opt<bool> persistentKernels(
    "persistent-kernels",
    cl::desc("Run eligible recurrences as one persistent kernel each, with "
             "the step loop as fallback (--target=cuda): small ones as one "
             "block per (head, batch row); bf16 ones at H = 2048 on sm_90 "
             "across all SMs (needs rnn_device_library.bc in the runtime "
             "directory)"),
    cl::init(true));
static cl::opt<std::string> layerWavefront(
    "layer-wavefront",
    cl::desc("Run a stack of scans as a wavefront over chunks of time steps, "
             "each layer's chunks on a stream of its own (pass "
             "rnn-layer-wavefront): auto (default: on for --target=cuda, off "
             "for the CPU, where the lanes run in order), on or off"),
    cl::init("auto"));
static cl::opt<unsigned>
    wavefrontChunk("wavefront-chunk",
                   cl::desc("Time steps of a wavefront's chunk (0, default: "
                            "ceil(sqrt(3 T)) at run time, on CUDA at least "
                            "32 for a 16-bit stack of H = 449 to 2048, at "
                            "most 32 batch rows and 64 steps or more)"),
                   cl::init(0));
static cl::opt<std::string> gpuFormat(
    "gpu-format",
    cl::desc("What the model embeds of its kernels (--target=cuda): fatbin "
             "(default: SASS for --gpu-chip plus PTX), or isa (the PTX text "
             "alone, compiled by the driver at load; readable with "
             "--emit=mlir)"),
    cl::init("fatbin"));
static cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the lowering pass pipeline (for rnn-opt --pass-pipeline, "
             "after rnn-optimize) and exit"),
    cl::init(false));
static cl::opt<bool> explain(
    "explain",
    cl::desc("Print, for every public function, the GEMMs and kernels it "
             "launches before, in and after each step loop and the rewrite "
             "behind each, then exit (to -o, or stdout)"),
    cl::init(false));
static cl::opt<std::string> runtimeDir(
    "runtime-dir",
    cl::desc("Where librnn_runtime.so is (default: ../lib next to this tool)"),
    cl::value_desc("dir"));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "rnn-compile: error: " << message << "\n";
  return 1;
}

/// Applies MLIR's pass-manager command-line options (timing, IR printing,
/// crash reproducers) to a pass manager of one of the stages.
static LogicalResult configure(PassManager &pm) {
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return failure();
  mlir::applyDefaultTimingPassManagerCLOptions(pm);
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // MLIR's pass-manager options (--mlir-timing, --mlir-print-ir-after-all,
  // ...) apply to every stage's pass manager.
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "rnn IR to a shared library\n");

  bool cuda = target == Target::CUDA;
  if (cuda) {
    // The NVVM serialisation runs ptxas and fatbinary from the CUDA toolkit
    // and links its libdevice; MLIR finds the toolkit through CUDA_HOME.
    const char *home = getenv("CUDA_HOME");
    std::string toolkit = home ? home : "/usr/local/cuda";
    std::string bin = toolkit + "/bin";
    if (!llvm::sys::fs::exists(bin + "/ptxas"))
      return fail("--target=cuda needs the CUDA toolkit: no ptxas in " + bin +
                  " (set CUDA_HOME)");
    setenv("CUDA_HOME", toolkit.c_str(), 1);
    const char *path = getenv("PATH");
    setenv("PATH", (bin + ":" + (path ? path : "")).c_str(), 1);
  }
  if (optLevel > 3)
    return fail("-O" + llvm::Twine(optLevel.getValue()) +
                " is not an optimisation level (0-3)");
  std::unique_ptr<rnn::OptimizePipelineOptions> pipelineOptions =
      rnn::OptimizePipelineOptions::createFromString(optimizeOptions);
  if (!pipelineOptions)
    return fail("--optimize-options='" + optimizeOptions +
                "' is not a list of rnn-optimize options (`rnn-opt --help` "
                "lists them under --rnn-optimize)");
  if (noOptimize && !optimizeOptions.empty())
    return fail("--optimize-options has no effect with --no-optimize");
  bool toStdout = emit == Emit::MLIR || emit == Emit::LLVM || explain;
  if (outputFile.empty() && !toStdout)
    return fail("an output file is required (-o model.so)");
  if (outputFile.empty())
    outputFile = "-";

  std::string runtime = runtimeDir;
  if (runtime.empty()) {
    std::string self = llvm::sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&fail));
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(dir, "..", "lib");
    runtime = std::string(dir);
  }
  llvm::SmallString<256> realRuntime;
  if (!llvm::sys::fs::real_path(runtime, realRuntime))
    runtime = std::string(realRuntime);

  DialectRegistry registry;
  rnn::registerCompilerDialects(registry);
  rnn::registerCompilerPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics name the op and its location; a dump of the whole module
  // after each one would bury them.
  context.printOpOnDiagnostic(false);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error); // Names the file and the reason.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail(inputFile + " is not valid rnn IR (see the diagnostics above)");
  if (failed(verify(*module)))
    return fail(inputFile + " is not valid rnn IR (see the diagnostics above)");

  // The output is written to a unique file beside the target and renamed over
  // it only once complete: a failed compile leaves the previous file, and a
  // process that has the previous library loaded keeps a valid mapping (the
  // rename replaces the directory entry, not the file's contents). Creating
  // it also fails early on an output that cannot be written.
  llvm::SmallString<256> staged;
  std::optional<llvm::FileRemover> removeStaged;
  if (outputFile != "-") {
    int fd;
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(
            outputFile + ".tmp-%%%%%%", fd, staged))
      return fail("cannot write " + outputFile + ": " + ec.message());
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    removeStaged.emplace(staged);
  }
  auto publish = [&]() -> int {
    if (staged.empty())
      return 0;
    if (std::error_code ec = llvm::sys::fs::rename(staged, outputFile))
      return fail("cannot write " + outputFile + ": " + ec.message());
    removeStaged->releaseFile();
    return 0;
  };
  StringRef target = staged.empty() ? StringRef(outputFile) : StringRef(staged);

  if (matmulType != "f32") {
    if (matmulType != "bf16" && matmulType != "f16" && matmulType != "tf32")
      return fail("--matmul-type must be f32, bf16, f16 or tf32, not '" +
                  matmulType + "'");
    PassManager pm(&context);
    if (failed(configure(pm)))
      return fail("the pass manager options are invalid");
    rnn::ReduceMatmulPrecisionOptions options;
    options.elementType = matmulType;
    pm.addPass(rnn::createReduceMatmulPrecision(options));
    if (failed(pm.run(*module)))
      return fail("rnn-reduce-matmul-precision failed");
  }
  if (savePolicy.getNumOccurrences() && !training)
    return fail("--save chooses what the training forward saves; it applies "
                "only with --training");
  if (savePolicy != "gates" && savePolicy != "states")
    return fail("--save must be gates or states, not '" + savePolicy + "'");
  if (training) {
    // Gate matmuls that share a left operand merge first, so that the
    // adjoint multiplies by the merged weight once (one dh matmul a step).
    PassManager pm(&context);
    if (failed(configure(pm)))
      return fail("the pass manager options are invalid");
    if (!noOptimize) {
      pm.addPass(createCanonicalizerPass());
      pm.addPass(rnn::createConcatGateMatmuls());
    }
    rnn::DifferentiateOptions options;
    options.save = savePolicy;
    pm.addPass(rnn::createDifferentiate(options));
    if (failed(pm.run(*module)))
      return fail("rnn-differentiate failed (see the diagnostics above)");
  }
  if (!noOptimize) {
    PassManager pm(&context);
    if (failed(configure(pm)))
      return fail("the pass manager options are invalid");
    rnn::buildOptimizePipeline(pm, *pipelineOptions);
    if (failed(pm.run(*module)))
      return fail("rnn-optimize failed");
  }
  if (layerWavefront != "auto" && layerWavefront != "on" &&
      layerWavefront != "off")
    return fail("--layer-wavefront must be auto, on or off, not '" +
                layerWavefront + "'");
  // After the manifest, which reads the results' sizes off the function as
  // written (the chunk loop hides them); before --explain, which shows it.
  auto runLayerWavefront = [&]() -> LogicalResult {
    if (layerWavefront == "off" || (layerWavefront == "auto" && !cuda))
      return success();
    PassManager pm(&context);
    if (failed(configure(pm)))
      return failure();
    rnn::LayerWavefrontOptions options;
    options.chunkSteps = wavefrontChunk;
    if (cuda && persistentKernels && rnn::runsPersistentKernels(gpuChip)) {
      // A lane's chunk long enough for the grid-wide kernel, whose one
      // copy of the blocks takes up to this many batch rows
      // (PersistentRecurrence.h).
      options.persistentMinSteps = rnn::persistent::kMinSteps;
      options.persistentMaxBatch =
          rnn::persistent::kMaxBatchTiles * rnn::persistent::kBatchTile;
      // The hidden sizes with layouts (padded to a multiple of 64).
      options.persistentMinHidden = rnn::persistent::kMinUnpaddedHidden;
      options.persistentMaxHidden = rnn::persistent::kMaxHidden;
    }
    pm.addPass(rnn::createLayerWavefront(options));
    return pm.run(*module);
  };
  if (explain) {
    if (failed(runLayerWavefront()))
      return fail("rnn-layer-wavefront failed");
    std::error_code ec;
    llvm::ToolOutputFile out(target, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail("cannot write " + outputFile + ": " + ec.message());
    out.os() << rnn::explainModule(*module);
    if (cuda)
      out.os() << rnn::explainPersistentKernels(
          *module, gpuChip, persistentKernels,
          /*deviceLibrary=*/persistentKernels);
    out.keep();
    return publish();
  }
  FailureOr<std::string> manifest = rnn::buildManifest(*module);
  if (failed(manifest))
    return fail("the model's signature cannot be described (see above)");
  if (failed(runLayerWavefront()))
    return fail("rnn-layer-wavefront failed");

  std::vector<std::string> functions;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    functions.push_back(func.getSymName().str());
    func->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));
  }
  if (functions.empty())
    return fail(inputFile + " has no public func.func to compile");

  if (gpuFormat != "fatbin" && gpuFormat != "isa")
    return fail("--gpu-format must be fatbin or isa, not '" + gpuFormat + "'");
  // The persistent kernels' device library is built beside the runtime.
  std::string deviceLibrary;
  if (cuda && persistentKernels) {
    llvm::SmallString<256> path(runtime);
    llvm::sys::path::append(path, "rnn_device_library.bc");
    if (!llvm::sys::fs::exists(path))
      return fail("no device library at " + path +
                  " (build the rnn_device_library target, or pass "
                  "--persistent-kernels=false)");
    deviceLibrary = std::string(path);
    if (llvm::Error error = rnn::checkDeviceLibrary(deviceLibrary))
      return fail(llvm::toString(std::move(error)));
  }

  PassManager lowering(&context);
  if (failed(configure(lowering)))
    return fail("the pass manager options are invalid");
  std::string pipeline =
      cuda ? rnn::cudaLoweringPipeline(
                 gpuChip, kPartials < 0 ? rnn::kCudaKPartials : kPartials,
                 deviceLibrary, gpuFormat, persistentKernels)
           : rnn::cpuLoweringPipeline(kPartials < 0 ? 0 : kPartials);
  if (printPipeline) {
    llvm::outs() << "builtin.module(" << pipeline << ")\n";
    return 0;
  }
  if (failed(parsePassPipeline(pipeline, lowering)))
    return fail("internal: the lowering pipeline does not parse");
  if (failed(lowering.run(*module)))
    return fail("lowering to the LLVM dialect failed (see above)");
  if (failed(rnn::addEntryPoints(*module, *manifest, functions,
                                 cuda ? "cuda" : "cpu")))
    return fail("cannot add the runtime entry points");

  if (emit == Emit::MLIR) {
    std::error_code ec;
    llvm::ToolOutputFile out(target, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail("cannot write " + outputFile + ": " + ec.message());
    module->print(out.os());
    out.keep();
    return publish();
  }
  if (emit == Emit::LLVM || emit == Emit::Obj)
    return failed(
               rnn::emitObject(*module, target, optLevel, emit == Emit::LLVM))
               ? fail("code generation failed")
               : publish();

  llvm::SmallString<256> object;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("rnn-model", "o", object))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeObject(object);
  if (failed(rnn::emitObject(*module, object, optLevel, false)))
    return fail("code generation failed");
  if (llvm::Error e = rnn::linkSharedLibrary(object, target, runtime, cuda))
    return fail(llvm::toString(std::move(e)));
  return publish();
}
