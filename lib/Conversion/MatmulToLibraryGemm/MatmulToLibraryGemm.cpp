//===- MatmulToLibraryGemm.cpp - linalg.matmul to a GEMM library call -----===//

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTMATMULTOLIBRARYGEMM
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

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

/// Whether the rows of `type` are contiguous: a unit stride on the last axis.
static bool hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

struct ConvertMatmulToLibraryGemmPass
    : public rnn::impl::ConvertMatmulToLibraryGemmBase<
          ConvertMatmulToLibraryGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::MatmulOp> matmuls;
    module.walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    if (matmuls.empty())
      return;

    OpBuilder moduleBuilder = OpBuilder::atBlockBegin(module.getBody());
    Type i32 = moduleBuilder.getI32Type(), i64 = moduleBuilder.getI64Type();
    SmallVector<Type> argTypes{i32, i32, i32, i64, i64, i64,
                               i64, i64, i64, i64, i64, i64};
    auto callee = module.lookupSymbol<func::FuncOp>(function);
    if (!callee) {
      callee = func::FuncOp::create(moduleBuilder, module.getLoc(), function,
                                    moduleBuilder.getFunctionType(argTypes, {}));
      callee.setPrivate();
    }

    for (linalg::MatmulOp matmul : matmuls) {
      if (!matmul.hasPureBufferSemantics())
        continue;
      Value a = matmul.getDpsInputs()[0], b = matmul.getDpsInputs()[1];
      Value c = matmul.getDpsInits()[0];
      auto aType = cast<MemRefType>(a.getType());
      auto bType = cast<MemRefType>(b.getType());
      auto cType = cast<MemRefType>(c.getType());
      int32_t abCode = dtypeCode(aType.getElementType());
      int32_t cCode = dtypeCode(cType.getElementType());
      if (abCode < 0 || cCode < 0 || bType.getElementType() != aType.getElementType() ||
          !hasUnitInnerStride(aType) || !hasUnitInnerStride(bType) ||
          !hasUnitInnerStride(cType))
        continue;
      // B is [N, K] (C = A·Bᵀ) when its map reads (n, k).
      AffineMap bMap = matmul.getIndexingMapsArray()[1];
      MLIRContext *context = &getContext();
      bool bIsNK = bMap == AffineMap::get(3, 0,
                                          {getAffineDimExpr(1, context),
                                           getAffineDimExpr(2, context)},
                                          context);

      OpBuilder builder(matmul);
      Location loc = matmul.getLoc();
      auto i64Of = [&](Value index) -> Value {
        return arith::IndexCastOp::create(builder, loc, i64, index);
      };
      auto constantI32 = [&](int32_t v) -> Value {
        return arith::ConstantIntOp::create(builder, loc, v, 32);
      };
      // The address of a memref's first element and its row stride.
      auto addressAndStride = [&](Value memref) -> std::pair<Value, Value> {
        auto type = cast<MemRefType>(memref.getType());
        auto metadata =
            memref::ExtractStridedMetadataOp::create(builder, loc, memref);
        Value aligned =
            memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref);
        int64_t bytes = type.getElementTypeBitWidth() / 8;
        Value offsetBytes = arith::MulIOp::create(
            builder, loc, metadata.getOffset(),
            arith::ConstantIndexOp::create(builder, loc, bytes));
        Value address = arith::AddIOp::create(builder, loc, aligned, offsetBytes);
        return {i64Of(address), i64Of(metadata.getStrides()[0])};
      };
      auto [aAddr, lda] = addressAndStride(a);
      auto [bAddr, ldb] = addressAndStride(b);
      auto [cAddr, ldc] = addressAndStride(c);
      Value m = i64Of(memref::DimOp::create(builder, loc, a, 0));
      Value k = i64Of(memref::DimOp::create(builder, loc, a, 1));
      Value n = i64Of(memref::DimOp::create(builder, loc, c, 1));
      func::CallOp::create(builder, loc, callee,
                           ValueRange{constantI32(abCode), constantI32(cCode),
                                      constantI32(bIsNK ? 0 : 1), m, n, k,
                                      aAddr, lda, bAddr, ldb, cAddr, ldc});
      matmul.erase();
      ++numCalls;
    }
  }
};

} // namespace
