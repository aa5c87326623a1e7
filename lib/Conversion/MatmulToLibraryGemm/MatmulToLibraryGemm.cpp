//===- MatmulToLibraryGemm.cpp - Matmul contractions to GEMM calls --------===//

#include "rnn/Conversion/Passes.h"

#include "../BufferViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTMATMULTOLIBRARYGEMM
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

/// b_layout's accumulate bit (RNN_GEMM_ACCUMULATE in rnn_cpu_gemm.h).
constexpr int32_t kAccumulateFlag = 4;

/// b_layout's bit for a B that stays unchanged during the call
/// (RNN_GEMM_B_CONSTANT in rnn_cuda_runtime.h).
constexpr int32_t kConstantBFlag = 8;

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

/// The runtime's rnn_dtype code of a float type, or -1.
static int32_t dtypeCode(Type type) {
  if (type.isF32())
    return 0;
  if (type.isF64())
    return 1;
  if (type.isBF16())
    return 2;
  if (type.isF16())
    return 3;
  return -1;
}

/// Whether the rows of a `[..., C]` memref can form one `[M, C]` matrix:
/// a strided layout with unit inner stride. For rank > 2 the leading
/// dimensions must also be packed (stride[d] = stride[d+1] * size[d+1]),
/// which `rowsArePacked` checks.
static bool hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return type.getRank() >= 2 && strides.back() == 1;
}

/// Null when the leading dimensions of `memref` are packed by its type
/// (rank 2, or an identity layout); otherwise an i1 that says whether they
/// are at run time. The rows of a sequence's slice ([1..T] of a buffer with
/// a row for the initial state) are packed, but a dynamic batch leaves its
/// stride unknown to the type.
static Value rowsArePacked(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() <= 2 || type.getLayout().isIdentity())
    return Value();
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value packed;
  for (int64_t d = 0; d + 2 < type.getRank(); ++d) {
    Value expected = arith::MulIOp::create(b, loc, metadata.getStrides()[d + 1],
                                           metadata.getSizes()[d + 1]);
    Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       metadata.getStrides()[d], expected);
    packed = packed ? arith::AndIOp::create(b, loc, packed, same) : same;
  }
  return packed;
}

/// The contraction accumulates onto a zero-filled buffer; the GEMM call
/// overwrites it (beta = 0), so a fill of the same buffer just before, with
/// nothing in between that touches memory, is dead where the call runs.
static linalg::FillOp findDeadZeroFill(linalg::GenericOp contraction,
                                       Value buffer) {
  for (Operation *op = contraction->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      return fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == buffer
                 ? fill
                 : linalg::FillOp();
    if (!isMemoryEffectFree(op))
      return linalg::FillOp();
  }
  return linalg::FillOp();
}

struct ConvertMatmulToLibraryGemmPass
    : public rnn::impl::ConvertMatmulToLibraryGemmBase<
          ConvertMatmulToLibraryGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::GenericOp> contractions;
    module.walk([&](linalg::GenericOp op) {
      if (op->hasAttr(rnn::kGemmWeightLayoutAttr))
        contractions.push_back(op);
    });
    if (contractions.empty())
      return;

    OpBuilder moduleBuilder = OpBuilder::atBlockBegin(module.getBody());
    Type i32 = moduleBuilder.getI32Type(), i64 = moduleBuilder.getI64Type();
    SmallVector<Type> argTypes{i32, i32, i32, i64, i64, i64,
                               i64, i64, i64, i64, i64, i64};
    auto callee = module.lookupSymbol<func::FuncOp>(function);
    if (!callee) {
      callee =
          func::FuncOp::create(moduleBuilder, module.getLoc(), function,
                               moduleBuilder.getFunctionType(argTypes, {}));
      callee.setPrivate();
    }

    // Decided before any call exists: the calls take addresses, which
    // isNeverWritten cannot follow.
    DenseSet<Value> constantArguments;
    if (constantBFlag)
      module.walk([&](func::FuncOp f) {
        if (f.isExternal())
          return;
        for (BlockArgument argument : f.getArguments())
          if (isa<MemRefType>(argument.getType()) && isNeverWritten(argument))
            constantArguments.insert(argument);
      });

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
      int32_t layout =
          cast<IntegerAttr>(contraction->getAttr(rnn::kGemmWeightLayoutAttr))
              .getInt();
      if (tf32Flag && contraction->hasAttr(rnn::kGemmAllowTf32Attr))
        layout |= 2;
      if (constantArguments.contains(rnn::rootBuffer(b)))
        layout |= kConstantBFlag;

      OpBuilder builder(contraction);
      Location loc = contraction.getLoc();
      auto i64Of = [&](Value index) -> Value {
        return arith::IndexCastOp::create(builder, loc, i64, index);
      };
      auto constantI32 = [&](int32_t v) -> Value {
        return arith::ConstantIntOp::create(builder, loc, v, 32);
      };
      // The address of a memref's first element, and the distance between
      // its rows (the row length when rows are packed).
      auto addressAndRowStride = [&](Value memref) -> std::pair<Value, Value> {
        auto type = cast<MemRefType>(memref.getType());
        auto metadata =
            memref::ExtractStridedMetadataOp::create(builder, loc, memref);
        Value aligned = memref::ExtractAlignedPointerAsIndexOp::create(
            builder, loc, memref);
        int64_t bytes = type.getElementTypeBitWidth() / 8;
        Value offsetBytes = arith::MulIOp::create(
            builder, loc, metadata.getOffset(),
            arith::ConstantIndexOp::create(builder, loc, bytes));
        Value address =
            arith::AddIOp::create(builder, loc, aligned, offsetBytes);
        Value rowStride = metadata.getStrides()[type.getRank() - 2];
        return {i64Of(address), i64Of(rowStride)};
      };
      // Operands whose rows are packed only at run time get the call under
      // a check, the contraction (and its zero fill) as the fallback.
      // Without a dead zero fill the contraction accumulates onto C's
      // contents (an rnn.matmul with acc): the call adds to C.
      linalg::FillOp fill = findDeadZeroFill(contraction, c);
      if (!fill)
        layout |= kAccumulateFlag;
      Value packed;
      for (Value operand : {a, c})
        if (Value check = rowsArePacked(builder, loc, operand))
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
        builder.setInsertionPointToStart(&guard.getThenRegion().front());
      }
      // M: the product of the leading sizes of A.
      Value rows = arith::ConstantIndexOp::create(builder, loc, 1);
      for (int64_t d = 0; d + 1 < aType.getRank(); ++d)
        rows = arith::MulIOp::create(builder, loc, rows,
                                     memref::DimOp::create(builder, loc, a, d));
      auto [aAddr, lda] = addressAndRowStride(a);
      auto [bAddr, ldb] = addressAndRowStride(b);
      auto [cAddr, ldc] = addressAndRowStride(c);
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
      ++numCalls;
    }
  }
};

} // namespace
