//===- ObjectEmission.cpp - LLVM IR, an object file, a shared library -----===//

#include "rnn/Compiler/Compiler.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

#ifndef RNN_CLANG_PATH
#define RNN_CLANG_PATH "clang"
#endif

namespace rnn {

static void optimize(llvm::Module &module, llvm::TargetMachine *machine,
                     unsigned optLevel) {
  if (optLevel == 0)
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  builder.buildPerModuleDefaultPipeline(level).run(module, mam);
}

LogicalResult emitObject(ModuleOp module, StringRef path, unsigned optLevel,
                         bool emitLLVMIR) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  hoistKernelArgumentAllocas(*llvmModule);

  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return module.emitError()
           << "no LLVM target for " << triple.str() << ": " << error;
  llvm::TargetOptions options;
  // Constructors (the CUDA backend's kernel loading) must go to .init_array:
  // the loader no longer runs the legacy .ctors section.
  options.UseInitArray = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), "", options, llvm::Reloc::PIC_,
      std::nullopt,
      optLevel == 0 ? llvm::CodeGenOptLevel::None
                    : llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  optimize(*llvmModule, machine.get(), optLevel);

  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError()
           << "cannot write " << path << ": " << ec.message();
  if (emitLLVMIR) {
    llvmModule->print(out.os(), nullptr);
  } else {
    llvm::legacy::PassManager passes;
    if (machine->addPassesToEmitFile(passes, out.os(), nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("the target cannot emit an object file");
    passes.run(*llvmModule);
  }
  out.keep();
  return success();
}

llvm::Error linkSharedLibrary(StringRef object, StringRef output,
                              StringRef runtimeDir, bool cuda) {
  std::string clang = RNN_CLANG_PATH;
  std::string rpath = ("-Wl,-rpath," + runtimeDir).str();
  std::string libDir = ("-L" + runtimeDir).str();
  // $ORIGIN first: a model copied next to its librnn_runtime.so (an
  // ahead-of-time artifact on another machine) finds it there.
  SmallVector<StringRef> args{clang,  "-shared", "-fuse-ld=lld", "-o", output,
                              object, libDir,    "-lrnn_runtime"};
  if (cuda)
    args.push_back("-lrnn_runtime_cuda");
  args.append({"-lm", "-Wl,-rpath,$ORIGIN", rpath});
  std::string message;
  int rc =
      llvm::sys::ExecuteAndWait(clang, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return llvm::createStringError("linking " + output.str() + " failed (" +
                                   clang +
                                   (message.empty() ? "" : ": " + message) +
                                   ", exit code " + std::to_string(rc) + ")");
  return llvm::Error::success();
}

} // namespace rnn
