//===- EntryPoints.cpp - rnn_call_<name> and rnn_manifest -----------------===//
//
// The runtime calls every function the same way, through a pointer array:
// `rnn_call_<name>(void **descriptors)` forwards descriptor i to argument i
// of the `_mlir_ciface_<name>` wrapper that the func-to-llvm lowering makes
// for functions marked `llvm.emit_c_interface`. The manifest is a string
// global the runtime parses.
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Compiler.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace rnn {

LogicalResult addEntryPoints(ModuleOp module, StringRef manifest,
                             ArrayRef<std::string> functions,
                             StringRef target) {
  MLIRContext *context = module.getContext();
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(context);

  std::string text = manifest.str();
  text.push_back('\0');
  auto arrayType =
      LLVM::LLVMArrayType::get(IntegerType::get(context, 8), text.size());
  LLVM::GlobalOp::create(builder, loc, arrayType, /*isConstant=*/true,
                         LLVM::Linkage::External, "rnn_manifest",
                         builder.getStringAttr(text));
  std::string targetText = target.str();
  targetText.push_back('\0');
  LLVM::GlobalOp::create(
      builder, loc,
      LLVM::LLVMArrayType::get(IntegerType::get(context, 8), targetText.size()),
      /*isConstant=*/true, LLVM::Linkage::External, "rnn_target",
      builder.getStringAttr(targetText));

  for (const std::string &name : functions) {
    auto wrapped =
        module.lookupSymbol<LLVM::LLVMFuncOp>("_mlir_ciface_" + name);
    if (!wrapped)
      return module.emitError() << "no C interface was generated for @" << name;
    // The wrapper passes every field of every descriptor to @name as a
    // scalar of its own: 1,250 arguments for an 8-layer bidirectional stack,
    // whose call alone took LLVM's code generator 3.3 s where the inliner's
    // cost model left it a call. Inlined, @name's body is the wrapper's.
    wrapped.walk([&](LLVM::CallOp call) {
      if (call.getCallee() == name)
        call.setAlwaysInline(true);
    });
    auto entryType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), {ptr});
    auto entry =
        LLVM::LLVMFuncOp::create(builder, loc, "rnn_call_" + name, entryType);
    Block *block = entry.addEntryBlock(builder);
    OpBuilder body = OpBuilder::atBlockEnd(block);
    Value argv = block->getArgument(0);
    SmallVector<Value> descriptors;
    for (unsigned i = 0, e = wrapped.getNumArguments(); i < e; ++i) {
      Value slot = LLVM::GEPOp::create(body, loc, ptr, ptr, argv,
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
      descriptors.push_back(LLVM::LoadOp::create(body, loc, ptr, slot));
    }
    LLVM::CallOp::create(body, loc, wrapped, descriptors);
    LLVM::ReturnOp::create(body, loc, ValueRange{});
  }
  return success();
}

} // namespace rnn
