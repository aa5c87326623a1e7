//===- MatmulToLibraryGemm.cpp - Matmul contractions to GEMM calls --------===//

#include "rnn/Conversion/Passes.h"

#include "../BufferViews.h"
#include "GemmOperands.h"
#include "KSplitPartials.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rnn {
#define GEN_PASS_DEF_CONVERTMATMULTOLIBRARYGEMM
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using namespace rnn::gemm;

namespace {

/// b_layout's accumulate bit (RNN_GEMM_ACCUMULATE in rnn_cpu_gemm.h).
constexpr int32_t kAccumulateFlag = 4;

/// b_layout's bit for a B that stays unchanged during the call
/// (RNN_GEMM_B_CONSTANT in rnn_cuda_runtime.h).
constexpr int32_t kConstantBFlag = 8;

/// b_layout's bit for a product inside a loop, which runs once per step
/// (RNN_GEMM_PER_STEP in rnn_cuda_runtime.h).
constexpr int32_t kPerStepFlag = 16;

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

/// Null when the first `count` dimensions of `memref` are packed rows by
/// its type (one dimension, or an identity layout); otherwise an i1 that
/// says whether they are at run time (each stride the next one's times its
/// size), for the rows to form one matrix dimension.
static Value leadingDimsPacked(OpBuilder &b, Location loc, Value memref,
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

//===----------------------------------------------------------------------===//
// Products stored rounded by the call
//===----------------------------------------------------------------------===//

/// A product that is stored in f32 only to be rounded: `rounding`, the one op
/// besides the product's fill, its contraction and its deallocation that
/// reads the product's buffer (directly or through `collapse`, a reshape
/// that nothing else reads), is a linalg.generic that rounds it
/// (arith.truncf), element by element, into `target`, later in the same
/// block with nothing in between that touches `target`. The GEMM can then
/// store the rounded product in `target` itself (cuBLAS and the CPU GEMM
/// accumulate in f32 and round once at the store, as the cast did).
struct RoundedStore {
  linalg::GenericOp rounding;
  memref::CollapseShapeOp collapse;
  Value target;
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  /// The target's allocation, where it comes after the contraction: moved
  /// before it when the rewrite happens.
  memref::AllocOp moveTarget;

  /// Where the GEMM writes, at `builder`: the target in the product's
  /// shape, its allocation moved there first where it came after.
  Value prepareTarget(OpBuilder &builder, Location loc) {
    if (moveTarget) {
      moveTarget->moveBefore(builder.getInsertionBlock(),
                             builder.getInsertionPoint());
      moveTarget = memref::AllocOp();
    }
    if (!collapse)
      return target;
    auto productType = cast<MemRefType>(alloc.getType());
    auto type =
        MemRefType::get(productType.getShape(),
                        cast<MemRefType>(target.getType()).getElementType());
    return memref::ExpandShapeOp::create(
        builder, loc, type, target, collapse.getReassociationIndices(),
        memref::getMixedSizes(builder, loc, alloc.getResult()));
  }

  /// The rounding again at `builder` (the fallback of a run-time check).
  void cloneRounding(OpBuilder &builder) {
    IRMapping mapping;
    if (collapse)
      builder.clone(*collapse, mapping);
    builder.clone(*rounding, mapping);
  }
};

static std::optional<RoundedStore>
findRoundedStore(linalg::GenericOp contraction, linalg::FillOp fill) {
  Value c = contraction.getDpsInits()[0];
  RoundedStore store;
  store.alloc = c.getDefiningOp<memref::AllocOp>();
  if (!fill || !store.alloc ||
      !cast<MemRefType>(c.getType()).getElementType().isF32())
    return std::nullopt;
  for (Operation *user : c.getUsers()) {
    if (user == fill.getOperation() || user == contraction.getOperation())
      continue;
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (store.dealloc)
        return std::nullopt;
      store.dealloc = dealloc;
      continue;
    }
    if (store.rounding || store.collapse)
      return std::nullopt;
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(user)) {
      if (!collapse->hasOneUse())
        return std::nullopt;
      store.collapse = collapse;
      user = *collapse->getUsers().begin();
    }
    store.rounding = dyn_cast<linalg::GenericOp>(user);
    if (!store.rounding)
      return std::nullopt;
  }
  linalg::GenericOp castOp = store.rounding;
  Value read = store.collapse ? store.collapse.getResult() : c;
  if (!castOp || !store.dealloc ||
      castOp->getBlock() != contraction->getBlock() ||
      !contraction->isBeforeInBlock(castOp) ||
      !castOp.hasPureBufferSemantics() || castOp.getNumDpsInputs() != 1 ||
      castOp.getNumDpsInits() != 1 || castOp.getDpsInputs()[0] != read ||
      castOp.getNumReductionLoops() != 0 ||
      !llvm::all_of(castOp.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return std::nullopt;
  Block &body = castOp.getRegion().front();
  auto truncate = dyn_cast<arith::TruncFOp>(&body.front());
  if (!truncate || truncate.getIn() != body.getArgument(0) ||
      truncate->getNextNode() != body.getTerminator() ||
      body.getTerminator()->getOperand(0) != truncate.getResult())
    return std::nullopt;
  store.target = castOp.getDpsInits()[0];
  auto targetType = cast<MemRefType>(store.target.getType());
  // The runtimes store a product in its operands' 16-bit type only (f32
  // operands rounded to bf16 stay a GEMM and a cast).
  Type operandElement =
      cast<MemRefType>(contraction.getDpsInputs()[0].getType())
          .getElementType();
  if (targetType.getElementType() != operandElement ||
      !operandElement.isIntOrFloat() ||
      operandElement.getIntOrFloatBitWidth() != 16 ||
      !hasUnitInnerStride(targetType) ||
      targetType.getRank() != cast<MemRefType>(read.getType()).getRank() ||
      (store.collapse && !targetType.getLayout().isIdentity()))
    return std::nullopt;
  // The GEMM must not write what it reads (a state updated as the rounded
  // product of itself).
  Value targetRoot = rnn::rootBuffer(store.target);
  for (Value input : contraction.getDpsInputs())
    if (rnn::rootBuffer(input) == targetRoot)
      return std::nullopt;
  // The target must exist where the contraction is: an allocation placed
  // between the two (the usual order after bufferization) moves up when
  // its sizes are known there.
  if (Operation *def = store.target.getDefiningOp()) {
    DominanceInfo dominance(contraction->getParentOp());
    if (!dominance.properlyDominates(def, contraction)) {
      auto alloc = dyn_cast<memref::AllocOp>(def);
      if (!alloc || alloc->getBlock() != contraction->getBlock() ||
          !llvm::all_of(alloc->getOperands(), [&](Value size) {
            return dominance.properlyDominates(size, contraction);
          }))
        return std::nullopt;
      store.moveTarget = alloc;
    }
  }
  // Between the two, nothing may touch the target's buffer: the GEMM writes
  // it where the contraction was.
  for (Operation *op = contraction->getNextNode(); op != castOp.getOperation();
       op = op->getNextNode()) {
    WalkResult touched = op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (isa<MemRefType>(operand.getType()) &&
            rnn::rootBuffer(operand) == targetRoot)
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (touched.wasInterrupted())
      return std::nullopt;
  }
  return store;
}

/// Erases the rounding that the call does now, and the product's buffer
/// where nothing else (a fallback) writes it.
static void eraseRounding(RoundedStore &rounded) {
  rounded.rounding.erase();
  if (rounded.collapse)
    rounded.collapse.erase();
  if (rounded.alloc->hasOneUse()) { // Its deallocation alone.
    rounded.dealloc.erase();
    rounded.alloc.erase();
  }
}

//===----------------------------------------------------------------------===//
// Head-wise products as strided-batched GEMMs, one per gate
//===----------------------------------------------------------------------===//

/// b_layout's bit for an A stored k x m (RNN_GEMM_A_KM in
/// rnn_cuda_runtime.h).
constexpr int32_t kTransposedAFlag = 32;

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

/// The strided-batched calls of one head-wise product (HeadwiseLowering's
/// generic, marked with its form), heads as the batch, one call per gate:
///   forward     out[r, g, h, :] = x[r, h, :] · R[h, g]ᵀ        (m = rows)
///   transposed  out[r, h, :] = Σ_g d[r, g, h, :] · R[h, g]     (m = rows)
///   outer sum   out[h, g] = Σ_r d[r, g, h, :]ᵀ · x[r, h, :]     (k = rows)
/// The rows (leading dimensions) must form one matrix dimension: packed by
/// the type, or checked at run time with the generic as the fallback.
/// Returns false, leaving the generic, when the operands do not qualify.
static bool convertHeadwiseProduct(linalg::GenericOp generic,
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
      SmallVector<PartialsPlan> plans;
      for (linalg::GenericOp contraction : contractions)
        if (std::optional<PartialsPlan> plan =
                planPartials(contraction, kPartials))
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
