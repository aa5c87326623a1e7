//===- HeadwiseGemms.cpp - Head-wise products as batched GEMMs ------------===//
//
// convert-matmul-to-library-gemm{batched-function}: each head-wise product
// that convert-rnn-to-linalg left as one generic becomes one strided-batched
// GEMM call per gate, the heads as the batch.
//
//===----------------------------------------------------------------------===//

#include "HeadwiseGemms.h"
#include "GemmOperands.h"
#include "RoundedStores.h"

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace rnn::gemm;

namespace {

/// A memref operand's address in bytes and its sizes and strides in
/// elements, all i64, read from its metadata.
struct StridedOperand {
  Value address;
  SmallVector<Value> sizes, strides;
  int64_t elementBytes = 0;

  /// The address `elements` further on (a constant count).
  Value at(OpBuilder &b, Location loc, Value elements) const {
    Value bytes = arith::MulIOp::create(
        b, loc, elements,
        arith::ConstantIntOp::create(b, loc, elementBytes, 64));
    return arith::AddIOp::create(b, loc, address, bytes);
  }
};

static StridedOperand describeOperand(OpBuilder &b, Location loc,
                                      Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  Type i64 = b.getI64Type();
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  StridedOperand operand;
  operand.elementBytes = type.getElementTypeBitWidth() / 8;
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value offset = arith::MulIOp::create(
      b, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(b, loc, operand.elementBytes));
  operand.address = arith::IndexCastOp::create(
      b, loc, i64, arith::AddIOp::create(b, loc, aligned, offset));
  for (int64_t d = 0; d < type.getRank(); ++d) {
    operand.sizes.push_back(
        arith::IndexCastOp::create(b, loc, i64, metadata.getSizes()[d]));
    operand.strides.push_back(
        arith::IndexCastOp::create(b, loc, i64, metadata.getStrides()[d]));
  }
  return operand;
}

/// Whether the innermost dimension of `value`'s memref type has unit stride.
static bool innermostIsContiguous(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return type && type.getRank() >= 1 &&
         succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

} // namespace

bool rnn::gemm::convertHeadwiseProduct(linalg::GenericOp generic,
                                       func::FuncOp callee, int32_t layoutFlags,
                                       unsigned &roundedStores) {
  auto form = static_cast<rnn::HeadwiseGemmForm>(
      cast<IntegerAttr>(generic->getAttr(rnn::kHeadwiseGemmAttr)).getInt());
  if (!generic.hasPureBufferSemantics() || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1)
    return false;
  Value lhs = generic.getDpsInputs()[0], rhs = generic.getDpsInputs()[1];
  Value out = generic.getDpsInits()[0];
  auto lhsType = dyn_cast<MemRefType>(lhs.getType());
  auto rhsType = dyn_cast<MemRefType>(rhs.getType());
  auto outType = dyn_cast<MemRefType>(out.getType());
  if (!lhsType || !rhsType || !outType ||
      lhsType.getElementType() != rhsType.getElementType() ||
      dtypeCode(lhsType.getElementType()) < 0 ||
      dtypeCode(outType.getElementType()) < 0 ||
      !llvm::all_of(ValueRange{lhs, rhs, out}, innermostIsContiguous))
    return false;
  // Rows of each operand: its leading dimensions.
  unsigned lhsRows, rhsRows = 0, outRows;
  int64_t gates;
  switch (form) {
  case rnn::kHeadwiseForward: // [rows, NH, K] x [NH, G, N, K] -> [rows, G, NH,
                              // N]
    lhsRows = lhsType.getRank() - 2, outRows = outType.getRank() - 3;
    gates = rhsType.getRank() == 4 ? rhsType.getDimSize(1) : 0;
    break;
  case rnn::kHeadwiseTransposed: // [rows, G, NH, N] x [NH, G, N, K] -> [rows,
                                 // NH, K]
    lhsRows = lhsType.getRank() - 3, outRows = outType.getRank() - 2;
    gates = rhsType.getRank() == 4 ? rhsType.getDimSize(1) : 0;
    break;
  case rnn::kHeadwiseOuterSum: // [R, G, NH, N] x [R, NH, K] -> [NH, G, N, K]
    lhsRows = lhsType.getRank() - 3, rhsRows = rhsType.getRank() - 2,
    outRows = 0;
    gates = outType.getRank() == 4 ? outType.getDimSize(1) : 0;
    if (lhsRows != 1 || rhsRows != 1)
      return false;
    break;
  }
  if (gates <= 0 || ShapedType::isDynamic(gates) || lhsRows < 1 ||
      (form != rnn::kHeadwiseOuterSum && outRows != lhsRows))
    return false;

  OpBuilder builder(generic);
  Location loc = generic.getLoc();
  linalg::FillOp fill = findDeadZeroFill(generic, out);
  // A weight gradient rounded to the weight's 16-bit type: the calls store
  // it rounded (one call: every gate's product is its own part of it).
  std::optional<RoundedStore> rounded;
  if (form == rnn::kHeadwiseOuterSum && gates == 1)
    rounded = findRoundedStore(generic, fill);
  if (rounded) {
    out = rounded->prepareTarget(builder, loc);
    outType = cast<MemRefType>(out.getType());
    ++roundedStores;
  }
  Value packed;
  for (auto [operand, rows] : {std::pair{lhs, lhsRows}, std::pair{rhs, rhsRows},
                               std::pair{out, outRows}})
    if (Value check = leadingDimsPacked(builder, loc, operand, rows))
      packed =
          packed ? arith::AndIOp::create(builder, loc, packed, check) : check;
  if (packed) {
    auto guard = scf::IfOp::create(builder, loc, packed, /*withElse=*/true);
    builder.setInsertionPointToStart(&guard.getElseRegion().front());
    if (fill)
      builder.clone(*fill);
    builder.clone(*generic)->removeAttr(rnn::kHeadwiseGemmAttr);
    if (rounded)
      rounded->cloneRounding(builder);
    builder.setInsertionPointToStart(&guard.getThenRegion().front());
  }
  StridedOperand a = describeOperand(builder, loc, lhs);
  StridedOperand b = describeOperand(builder, loc, rhs);
  StridedOperand c = describeOperand(builder, loc, out);
  auto i32Constant = [&](int32_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };
  auto i64Constant = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 64);
  };
  auto times = [&](Value x, int64_t g) -> Value {
    return arith::MulIOp::create(builder, loc, x, i64Constant(g));
  };
  // The product of the leading `count` sizes of `operand`.
  auto rowsOf = [&](const StridedOperand &operand, unsigned count) {
    Value rows = operand.sizes[0];
    for (unsigned d = 1; d < count; ++d)
      rows = arith::MulIOp::create(builder, loc, rows, operand.sizes[d]);
    return rows;
  };
  Value abCode = i32Constant(dtypeCode(lhsType.getElementType()));
  Value cCode = i32Constant(dtypeCode(outType.getElementType()));
  // Strides of the head dimension and of the gate dimension, per form.
  for (int64_t g = 0; g < gates; ++g) {
    int32_t flags = layoutFlags;
    // Each gate's call overwrites its own part of the result, except the
    // transposed product's, where the gates add up into one result.
    bool accumulate = !fill || (form == rnn::kHeadwiseTransposed && g > 0);
    if (accumulate)
      flags |= kAccumulateFlag;
    SmallVector<Value> args{abCode, cCode};
    switch (form) {
    case rnn::kHeadwiseForward: {
      unsigned r = lhsRows; // R[h, g] is n x k.
      args.append({i32Constant(flags), b.sizes[0], rowsOf(a, r), b.sizes[2],
                   b.sizes[3], a.address, a.strides[r - 1], a.strides[r],
                   b.at(builder, loc, times(b.strides[1], g)), b.strides[2],
                   b.strides[0], c.at(builder, loc, times(c.strides[r], g)),
                   c.strides[r - 1], c.strides[r + 1]});
      break;
    }
    case rnn::kHeadwiseTransposed: {
      unsigned r = lhsRows;
      flags |= 1; // R[h, g] [N, K] is k x n.
      args.append({i32Constant(flags), b.sizes[0], rowsOf(a, r), b.sizes[3],
                   b.sizes[2], a.at(builder, loc, times(a.strides[r], g)),
                   a.strides[r - 1], a.strides[r + 1],
                   b.at(builder, loc, times(b.strides[1], g)), b.strides[2],
                   b.strides[0], c.address, c.strides[r - 1], c.strides[r]});
      break;
    }
    case rnn::kHeadwiseOuterSum: {
      // A: d's gate g, head h, stored [R, N] (k x m); B: x's head h, [R, K]
      // (k x n).
      flags |= 1 | kTransposedAFlag;
      args.append({i32Constant(flags), c.sizes[0], c.sizes[2], c.sizes[3],
                   a.sizes[0], a.at(builder, loc, times(a.strides[1], g)),
                   a.strides[0], a.strides[2], b.address, b.strides[0],
                   b.strides[1], c.at(builder, loc, times(c.strides[1], g)),
                   c.strides[2], c.strides[0]});
      break;
    }
    }
    func::CallOp::create(builder, loc, callee, args);
  }
  if (fill)
    fill.erase();
  generic.erase();
  if (rounded)
    eraseRounding(*rounded);
  return true;
}
