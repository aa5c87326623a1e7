//===- DeviceLibraryCheck.cpp - The device library's entry point types ----===//
//
// The generated kernels declare the device library's entry points
// (convert-step-loops-to-persistent-kernels) and gpu-module-to-binary links
// the library's bitcode into them. Where a declaration and the definition
// disagree, LLVM still links: the call stays a call to a function of
// another type, is never inlined, and the kernel misbehaves. So rnn-compile
// reads the library's function types first, lazily (no bodies), and
// compares them with the table both sides are written from.
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Compiler.h"

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Support/SourceMgr.h"

namespace persistent = rnn::persistent;

/// The table's spelling of `type`: 'i' i32, 'f' f32, 'p' a pointer, 'v'
/// void, '?' anything else.
static char spellingOf(llvm::Type *type) {
  if (type->isVoidTy())
    return 'v';
  if (type->isIntegerTy(32))
    return 'i';
  if (type->isFloatTy())
    return 'f';
  if (type->isPointerTy())
    return 'p';
  return '?';
}

/// `(parameters) -> result` in the table's spelling, for messages.
static std::string describe(llvm::StringRef parameters, char result) {
  return ("(" + parameters + ") -> " + llvm::Twine(result)).str();
}

llvm::Error rnn::checkDeviceLibrary(llvm::StringRef path) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> library =
      llvm::getLazyIRFileModule(path, diagnostic, context);
  if (!library)
    return llvm::createStringError("cannot read the device library at " + path +
                                   ": " + diagnostic.getMessage());
  const char *remedy = " (rebuild the rnn_device_library target with the "
                       "compiler, or pass --persistent-kernels=false)";
  auto check =
      [&](llvm::Function &function,
          const persistent::EntryPointSignature &signature) -> llvm::Error {
    std::string parameters;
    for (llvm::Type *type : function.getFunctionType()->params())
      parameters += spellingOf(type);
    char result = spellingOf(function.getReturnType());
    if (parameters == signature.parameters && result == signature.result)
      return llvm::Error::success();
    return llvm::createStringError(
        "the device library at " + path + " defines " + function.getName() +
        " as " + describe(parameters, result) +
        ", and this compiler calls it as " +
        describe(signature.parameters, signature.result) + remedy);
  };
  auto missing = [&](llvm::StringRef what) {
    return llvm::createStringError("the device library at " + path +
                                   " has no " + what + remedy);
  };
  for (const persistent::EntryPointSignature &signature :
       persistent::kSharedEntryPointSignatures) {
    std::string name = ("rnn_persistent_" + llvm::Twine(signature.entry)).str();
    llvm::Function *function = library->getFunction(name);
    if (!function || function->isDeclaration())
      return missing(name);
    if (llvm::Error error = check(*function, signature))
      return error;
  }
  // Every entry point of every layout this compiler may call, in one walk:
  // a definition of another type is reported first (the library was built
  // from another table), else the first one missing (a library built for
  // fewer layouts), which would otherwise only show as ptxas's unresolved
  // function.
#define RNN_PERSISTENT_HIDDEN_VALUE(H) H,
  static constexpr int kHiddenSizes[] = {
      RNN_PERSISTENT_FOR_EACH_HIDDEN(RNN_PERSISTENT_HIDDEN_VALUE)};
#undef RNN_PERSISTENT_HIDDEN_VALUE
  std::string firstMissing;
  for (persistent::Direction direction :
       {persistent::Direction::Forward, persistent::Direction::Backward})
    for (int gates = persistent::kMinGates; gates <= persistent::kMaxGates;
         ++gates)
      for (int hidden : kHiddenSizes) {
        for (persistent::Operands operands :
             {persistent::Operands::BF16, persistent::Operands::F16,
              persistent::Operands::TF32}) {
          if (!persistent::layoutFor(direction, operands, gates, hidden).valid)
            continue;
          for (const persistent::EntryPointSignature &signature :
               persistent::kEntryPointSignatures) {
            std::string name = persistent::entryPointName(
                direction, operands, gates, hidden, signature.entry);
            llvm::Function *function = library->getFunction(name);
            if (!function || function->isDeclaration()) {
              if (firstMissing.empty())
                firstMissing = name;
              continue;
            }
            if (llvm::Error error = check(*function, signature))
              return error;
          }
        }
      }
  if (!firstMissing.empty())
    return missing(firstMissing);
  return llvm::Error::success();
}
