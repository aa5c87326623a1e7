//===- LaunchArgumentAllocas.cpp - Kernel arguments off the loop's stack --===//
//
// MLIR's translation of `gpu.launch_func` builds each launch's argument
// struct and its array of pointers with `alloca`s where the launch is, so a
// launch inside a time loop allocates stack space on every step that is only
// given back when the function returns: a backward whose step kernel takes
// 555 arguments grew the stack by 9 KiB a step and overflowed it at
// T = 1000. The launch copies its arguments before it returns, so one slot
// per launch, allocated once in the entry block, serves every step. The
// same holds for the slots of `memref.dim`'s lowering (stored, then loaded
// in the same block), which only optimisation removes.
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Compiler.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

namespace rnn {

namespace {

/// Whether `call` is one of the runtime's kernel launches, which read the
/// argument pointers during the call and keep none of them.
bool isKernelLaunch(const llvm::CallBase &call) {
  const llvm::Function *callee = call.getCalledFunction();
  if (!callee)
    return false;
  llvm::StringRef name = callee->getName();
  return name == "mgpuLaunchKernel" || name == "mgpuLaunchClusterKernel";
}

/// The alloca `pointer` points into, through any offsets, or null.
const llvm::AllocaInst *underlyingAlloca(const llvm::Value *pointer) {
  while (const auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(pointer))
    pointer = gep->getPointerOperand();
  return llvm::dyn_cast<llvm::AllocaInst>(pointer);
}

/// Whether every use of `alloca` stays in its block: loads and stores
/// through it, its address stored into another alloca of the same block (a
/// launch's pointer array) or passed to a kernel launch. Then no value of
/// one execution of the block reaches the next, and one slot for all
/// executions is equivalent to a fresh slot for each.
bool onlyServesLaunchesInItsBlock(const llvm::AllocaInst &alloca) {
  const llvm::BasicBlock *block = alloca.getParent();
  llvm::SmallVector<const llvm::Value *> worklist{&alloca};
  while (!worklist.empty()) {
    const llvm::Value *pointer = worklist.pop_back_val();
    for (const llvm::User *user : pointer->users()) {
      const auto *inst = llvm::dyn_cast<llvm::Instruction>(user);
      if (!inst || inst->getParent() != block)
        return false;
      if (const auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(inst)) {
        if (gep->getPointerOperand() != pointer)
          return false;
        worklist.push_back(gep);
        continue;
      }
      if (llvm::isa<llvm::LoadInst>(inst))
        continue;
      if (const auto *store = llvm::dyn_cast<llvm::StoreInst>(inst)) {
        if (store->getPointerOperand() == pointer &&
            store->getValueOperand() != pointer)
          continue;
        const llvm::AllocaInst *destination =
            underlyingAlloca(store->getPointerOperand());
        if (!destination || destination->getParent() != block)
          return false;
        continue;
      }
      if (const auto *call = llvm::dyn_cast<llvm::CallBase>(inst);
          call && isKernelLaunch(*call))
        continue;
      return false;
    }
  }
  return true;
}

} // namespace

void hoistKernelArgumentAllocas(llvm::Module &module) {
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    llvm::BasicBlock &entry = function.getEntryBlock();
    llvm::SmallVector<llvm::AllocaInst *> hoisted;
    for (llvm::BasicBlock &block : function) {
      if (&block == &entry)
        continue;
      for (llvm::Instruction &inst : block)
        if (auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
            alloca && llvm::isa<llvm::ConstantInt>(alloca->getArraySize()) &&
            onlyServesLaunchesInItsBlock(*alloca))
          hoisted.push_back(alloca);
    }
    for (llvm::AllocaInst *alloca : hoisted)
      alloca->moveBefore(entry.getFirstInsertionPt());
  }
}

} // namespace rnn
