//===- GemmOperands.cpp - Operands of the library GEMM calls --------------===//

#include "GemmOperands.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

int32_t rnn::gemm::dtypeCode(Type type) {
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

bool rnn::gemm::hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return type.getRank() >= 2 && strides.back() == 1;
}

linalg::FillOp rnn::gemm::findDeadZeroFill(linalg::GenericOp contraction,
                                           Value buffer) {
  for (Operation *op = contraction->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      return fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == buffer &&
                     (matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
                      matchPattern(fill.getInputs()[0], m_Zero()))
                 ? fill
                 : linalg::FillOp();
    if (!isMemoryEffectFree(op))
      return linalg::FillOp();
  }
  return linalg::FillOp();
}

Value rnn::gemm::leadingDimsPacked(OpBuilder &b, Location loc, Value memref,
                                   unsigned count) {
  auto type = cast<MemRefType>(memref.getType());
  if (count <= 1 || type.getLayout().isIdentity())
    return Value();
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value packed;
  for (unsigned d = 0; d + 1 < count; ++d) {
    Value expected = arith::MulIOp::create(b, loc, metadata.getStrides()[d + 1],
                                           metadata.getSizes()[d + 1]);
    Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       metadata.getStrides()[d], expected);
    packed = packed ? arith::AndIOp::create(b, loc, packed, same) : same;
  }
  return packed;
}

std::pair<Value, Value>
rnn::gemm::addressAndRowStride(OpBuilder &builder, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  Type i64 = builder.getI64Type();
  auto metadata =
      memref::ExtractStridedMetadataOp::create(builder, loc, memref);
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref);
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  Value offsetBytes = arith::MulIOp::create(
      builder, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(builder, loc, bytes));
  Value address = arith::AddIOp::create(builder, loc, aligned, offsetBytes);
  Value rowStride = metadata.getStrides()[type.getRank() - 2];
  return {arith::IndexCastOp::create(builder, loc, i64, address),
          arith::IndexCastOp::create(builder, loc, i64, rowStride)};
}
