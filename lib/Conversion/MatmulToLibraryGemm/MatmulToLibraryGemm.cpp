//===- MatmulToLibraryGemm.cpp - Matmul contractions to GEMM calls --------===//

#include "rnn/Conversion/Passes.h"

#include "../BufferViews.h"
#include "GemmOperands.h"
#include "HeadwiseGemms.h"
#include "KSplitPartials.h"
#include "RoundedStores.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTMATMULTOLIBRARYGEMM
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn::gemm;

namespace {

/// Whether nothing in `function` writes `argument` or a view of it. Any use
/// that is not a view and does not declare its memory effects (a call, a
/// region op, an extracted pointer) counts as a write.
static bool isNeverWritten(BlockArgument argument) {
  SmallVector<Value> worklist{argument};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == value) {
          worklist.push_back(view->getResult(0));
          continue;
        }
      }
      if (isa<memref::ExtractStridedMetadataOp>(user))
        continue; // Sizes and strides only.
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects)
        return false;
      SmallVector<MemoryEffects::EffectInstance> onValue;
      effects.getEffectsOnValue(value, onValue);
      if (llvm::any_of(onValue, [](const MemoryEffects::EffectInstance &e) {
            return !isa<MemoryEffects::Read>(e.getEffect());
          }))
        return false;
      // An op that names no effect on the value but has effects elsewhere
      // (pointer extraction) may let it escape.
      if (onValue.empty() && !isMemoryEffectFree(user))
        return false;
    }
  }
  return true;
}

/// The private declaration of `name` with `argTypes` and no results.
static func::FuncOp declareCallee(ModuleOp module, StringRef name,
                                  ArrayRef<Type> argTypes) {
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  auto callee = func::FuncOp::create(builder, module.getLoc(), name,
                                     builder.getFunctionType(argTypes, {}));
  callee.setPrivate();
  return callee;
}

struct ConvertMatmulToLibraryGemmPass
    : public rnn::impl::ConvertMatmulToLibraryGemmBase<
          ConvertMatmulToLibraryGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::GenericOp> contractions, headwise;
    module.walk([&](linalg::GenericOp op) {
      if (op->hasAttr(rnn::kGemmWeightLayoutAttr))
        contractions.push_back(op);
      else if (!batchedFunction.empty() && op->hasAttr(rnn::kHeadwiseGemmAttr))
        headwise.push_back(op);
    });
    if (contractions.empty() && headwise.empty())
      return;

    Builder types(module.getContext());
    Type i32 = types.getI32Type(), i64 = types.getI64Type();
    func::FuncOp callee = declareCallee(
        module, function,
        {i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64});

    // Decided before any call exists: the calls take addresses, which
    // isNeverWritten cannot follow.
    DenseSet<Value> constantArguments;
    // Only functions that nothing in the module calls: a caller may write
    // an argument before the call, and the CUDA runtime reads constant
    // weights before it waits for the work ahead (the preloaded partials
    // GEMM).
    DenseSet<StringRef> called;
    module.walk([&](func::CallOp call) { called.insert(call.getCallee()); });
    if (constantBFlag)
      module.walk([&](func::FuncOp f) {
        if (f.isExternal() || called.contains(f.getSymName()))
          return;
        for (BlockArgument argument : f.getArguments())
          if (isa<MemRefType>(argument.getType()) && isNeverWritten(argument))
            constantArguments.insert(argument);
      });
    // b_layout without the accumulate bit.
    auto layoutFlags = [&](linalg::GenericOp contraction) {
      int32_t layout =
          cast<IntegerAttr>(contraction->getAttr(rnn::kGemmWeightLayoutAttr))
              .getInt();
      if (tf32Flag && contraction->hasAttr(rnn::kGemmAllowTf32Attr))
        layout |= 2;
      if (constantArguments.contains(
              rnn::rootBuffer(contraction.getDpsInputs()[1])))
        layout |= kConstantBFlag;
      if (perStepFlag && contraction->getParentOfType<LoopLikeOpInterface>())
        layout |= kPerStepFlag;
      return layout;
    };

    if (!headwise.empty()) {
      func::FuncOp batchedCallee =
          declareCallee(module, batchedFunction,
                        {i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64,
                         i64, i64, i64, i64, i64});
      for (linalg::GenericOp product : headwise) {
        // The weight (B) of a head-wise matmul may be constant; the outer
        // sum's operands are per-call data.
        int32_t flags = 0;
        if (tf32Flag && product->hasAttr(rnn::kGemmAllowTf32Attr))
          flags |= 2;
        auto form = cast<IntegerAttr>(product->getAttr(rnn::kHeadwiseGemmAttr));
        if (form.getInt() != rnn::kHeadwiseOuterSum &&
            constantArguments.contains(
                rnn::rootBuffer(product.getDpsInputs()[1])))
          flags |= kConstantBFlag;
        if (perStepFlag && product->getParentOfType<LoopLikeOpInterface>())
          flags |= kPerStepFlag;
        unsigned roundedStores = 0;
        if (convertHeadwiseProduct(product, batchedCallee, flags,
                                   roundedStores))
          ++numBatched;
        numRoundedStores += roundedStores;
      }
    }

    // K-split partials first; the branches that keep the plain product are
    // then converted below like any other contraction.
    if (kPartials >= 2) {
      // One plan per consumer: each rewrite replaces its consumer (a kernel
      // reading two products, or the one after an in-step product that also
      // reads a loop-carried one, keeps the second plain).
      SmallVector<PartialsPlan> plans;
      DenseSet<Operation *> consumers;
      for (linalg::GenericOp contraction : contractions)
        if (std::optional<PartialsPlan> plan =
                planPartials(contraction, kPartials);
            plan && consumers.insert(plan->consumer).second)
          plans.push_back(*plan);
      if (!plans.empty()) {
        func::FuncOp partialsCallee = declareCallee(
            module, partialsFunction,
            {i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64});
        for (PartialsPlan &plan : plans) {
          splitIntoPartials(plan, partialsCallee,
                            layoutFlags(plan.contraction));
          ++numPartials;
        }
        contractions.clear();
        module.walk([&](linalg::GenericOp op) {
          if (op->hasAttr(rnn::kGemmWeightLayoutAttr))
            contractions.push_back(op);
        });
      }
    }

    for (linalg::GenericOp contraction : contractions) {
      if (!contraction.hasPureBufferSemantics())
        continue;
      Value a = contraction.getDpsInputs()[0],
            b = contraction.getDpsInputs()[1];
      Value c = contraction.getDpsInits()[0];
      auto aType = cast<MemRefType>(a.getType());
      auto bType = cast<MemRefType>(b.getType());
      auto cType = cast<MemRefType>(c.getType());
      int32_t abCode = dtypeCode(aType.getElementType());
      int32_t cCode = dtypeCode(cType.getElementType());
      if (abCode < 0 || cCode < 0 ||
          bType.getElementType() != aType.getElementType() ||
          !hasUnitInnerStride(aType) || bType.getRank() != 2 ||
          !hasUnitInnerStride(bType) || !hasUnitInnerStride(cType))
        continue;
      int32_t layout = layoutFlags(contraction);
      linalg::FillOp fill = findDeadZeroFill(contraction, c);
      // A product that is only rounded into another buffer is stored there
      // by the GEMM; the rounding generic stays for the fallback only.
      std::optional<RoundedStore> rounded = findRoundedStore(contraction, fill);
      OpBuilder builder(contraction);
      Location loc = contraction.getLoc();
      if (rounded) {
        c = rounded->prepareTarget(builder, loc);
        cType = cast<MemRefType>(c.getType());
        cCode = dtypeCode(cType.getElementType());
        ++numRoundedStores;
      }

      auto i64Of = [&](Value index) -> Value {
        return arith::IndexCastOp::create(builder, loc, i64, index);
      };
      auto constantI32 = [&](int32_t v) -> Value {
        return arith::ConstantIntOp::create(builder, loc, v, 32);
      };
      // Operands whose rows are packed only at run time get the call under
      // a check, the contraction (and its zero fill) as the fallback.
      // Without a dead zero fill the contraction accumulates onto C's
      // contents (an rnn.matmul with acc): the call adds to C.
      if (!fill)
        layout |= kAccumulateFlag;
      Value packed;
      for (Value operand : {a, c})
        if (Value check = leadingDimsPacked(
                builder, loc, operand,
                cast<MemRefType>(operand.getType()).getRank() - 1))
          packed = packed ? arith::AndIOp::create(builder, loc, packed, check)
                          : check;
      scf::IfOp guard;
      if (packed) {
        guard = scf::IfOp::create(builder, loc, packed, /*withElse=*/true);
        builder.setInsertionPointToStart(&guard.getElseRegion().front());
        if (fill)
          builder.clone(*fill);
        Operation *fallback = builder.clone(*contraction);
        fallback->removeAttr(rnn::kGemmWeightLayoutAttr);
        fallback->removeAttr(rnn::kGemmAllowTf32Attr);
        if (rounded)
          rounded->cloneRounding(builder);
        builder.setInsertionPointToStart(&guard.getThenRegion().front());
      }
      // M: the product of the leading sizes of A.
      Value rows = arith::ConstantIndexOp::create(builder, loc, 1);
      for (int64_t d = 0; d + 1 < aType.getRank(); ++d)
        rows = arith::MulIOp::create(builder, loc, rows,
                                     memref::DimOp::create(builder, loc, a, d));
      auto [aAddr, lda] = addressAndRowStride(builder, loc, a);
      auto [bAddr, ldb] = addressAndRowStride(builder, loc, b);
      auto [cAddr, ldc] = addressAndRowStride(builder, loc, c);
      Value k =
          i64Of(memref::DimOp::create(builder, loc, a, aType.getRank() - 1));
      Value n =
          i64Of(memref::DimOp::create(builder, loc, c, cType.getRank() - 1));
      func::CallOp::create(builder, loc, callee,
                           ValueRange{constantI32(abCode), constantI32(cCode),
                                      constantI32(layout), i64Of(rows), n, k,
                                      aAddr, lda, bAddr, ldb, cAddr, ldc});
      if (fill)
        fill.erase();
      contraction.erase();
      if (rounded)
        eraseRounding(*rounded);
      ++numCalls;
    }
  }
};

} // namespace
