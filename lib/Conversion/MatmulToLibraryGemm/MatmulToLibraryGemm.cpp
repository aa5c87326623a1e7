//===- MatmulToLibraryGemm.cpp - Matmul contractions to GEMM calls --------===//

#include "rnn/Conversion/Passes.h"

#include "../BufferViews.h"

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
/// which `leadingDimsPacked` checks.
static bool hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return type.getRank() >= 2 && strides.back() == 1;
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

/// The address of a memref's first element as i64, and the distance between
/// its rows (the row length when rows are packed).
static std::pair<Value, Value> addressAndRowStride(OpBuilder &builder,
                                                   Location loc, Value memref) {
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
// Recurrent products split into K-slice partials for their consumer
//===----------------------------------------------------------------------===//

/// Limits of the K-split (Passes.td): products worth splitting, and batches
/// whose partials stay cheap.
constexpr int64_t kPartialsMinK = 1024, kPartialsMaxN = 2048;
constexpr int64_t kPartialsMinRows = 16, kPartialsMaxBytes = 16 << 20;

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

/// A product to split: the contraction, the zero fill before it, the
/// elementwise generic that reads its result (the inputs `consumerInputs`:
/// the result itself or windows of it, such as the gates of concatenated
/// matmuls), the result's allocation and deallocation, and the number of
/// slices.
struct PartialsPlan {
  linalg::GenericOp contraction, consumer;
  linalg::FillOp fill;
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  SmallVector<unsigned> consumerInputs;
  /// Per consumer input, the window it reads (null: the whole product).
  SmallVector<memref::SubViewOp> windows;
  int64_t slices = 0;
};

/// A window of `product` that only `consumer` reads: a 2-D subview of it in
/// the same block, before the consumer.
static memref::SubViewOp consumedWindow(Value view, Value product,
                                        linalg::GenericOp consumer) {
  auto window = view.getDefiningOp<memref::SubViewOp>();
  if (!window || window.getSource() != product ||
      window.getType().getRank() != 2 ||
      window->getBlock() != consumer->getBlock() || !window->hasOneUse() ||
      *window->getUsers().begin() != consumer.getOperation())
    return memref::SubViewOp();
  return window;
}

/// The plan for `contraction`, or nothing when it does not qualify.
static std::optional<PartialsPlan> planPartials(linalg::GenericOp contraction,
                                                int64_t kPartials) {
  if (kPartials < 2 || !contraction.hasPureBufferSemantics())
    return std::nullopt;
  auto layout =
      contraction->getAttrOfType<IntegerAttr>(rnn::kGemmWeightLayoutAttr);
  if (!layout || layout.getInt() != 0)
    return std::nullopt;
  Value a = contraction.getDpsInputs()[0], b = contraction.getDpsInputs()[1];
  Value c = contraction.getDpsInits()[0];
  auto aType = cast<MemRefType>(a.getType());
  auto bType = cast<MemRefType>(b.getType());
  auto cType = cast<MemRefType>(c.getType());
  if (aType.getRank() != 2 || bType.getRank() != 2 || cType.getRank() != 2 ||
      !bType.hasStaticShape() || !cType.getLayout().isIdentity() ||
      !cType.getElementType().isF32() || !hasUnitInnerStride(aType) ||
      !hasUnitInnerStride(bType) || dtypeCode(aType.getElementType()) < 0 ||
      bType.getElementType() != aType.getElementType())
    return std::nullopt;
  int64_t n = bType.getDimSize(0), k = bType.getDimSize(1);
  // Half the slices past N / 2 for 16-bit operands, which cuBLAS runs (its
  // strided-batched GEMM was faster so); the CUDA runtime's own kernel takes
  // f32 products at every N with the same slices.
  bool halve = n > kPartialsMaxN / 2 && !aType.getElementType().isF32();
  int64_t slices = halve ? std::max<int64_t>(2, kPartials / 2) : kPartials;
  if (k < kPartialsMinK || n > kPartialsMaxN || k % slices != 0 ||
      cType.getDimSize(1) != n)
    return std::nullopt;
  PartialsPlan plan;
  plan.contraction = contraction;
  plan.slices = slices;
  plan.fill = findDeadZeroFill(contraction, c);
  plan.alloc = c.getDefiningOp<memref::AllocOp>();
  if (!plan.fill || !plan.alloc ||
      !plan.alloc->getParentRegion()->isProperAncestor(
          contraction->getParentRegion()))
    return std::nullopt;
  // The next op that may touch memory reads the product, elementwise.
  Operation *next = contraction->getNextNode();
  while (next && isMemoryEffectFree(next))
    next = next->getNextNode();
  plan.consumer = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!plan.consumer || !plan.consumer.hasPureBufferSemantics() ||
      plan.consumer.getNumLoops() != 2 ||
      plan.consumer.getNumParallelLoops() != 2)
    return std::nullopt;
  for (OpOperand *input : plan.consumer.getDpsInputOperands()) {
    memref::SubViewOp window = consumedWindow(input->get(), c, plan.consumer);
    if (input->get() != c && !window)
      continue;
    if (!plan.consumer.getMatchingIndexingMap(input).isIdentity())
      return std::nullopt;
    plan.consumerInputs.push_back(input->getOperandNumber());
    plan.windows.push_back(window);
  }
  // The consumer may write into the product (or a window of it), but not
  // read what it overwrites: that value is never computed with partials.
  bool consumerWrites = false;
  for (OpOperand &init : plan.consumer.getDpsInitsMutable()) {
    bool intoProduct = init.get() == c;
    if (!intoProduct && !consumedWindow(init.get(), c, plan.consumer))
      continue;
    if (plan.consumer.payloadUsesValueFromOperand(&init))
      return std::nullopt;
    if (intoProduct) {
      if (!plan.consumer.getMatchingIndexingMap(&init).isIdentity())
        return std::nullopt;
      consumerWrites = true;
    }
  }
  if (plan.consumerInputs.empty())
    return std::nullopt;
  // Nothing else may see the product: the result is used by the fill, the
  // contraction, the consumer and, after the consumer in the same block,
  // ops that read what the consumer wrote into it or come after a fill of
  // it; besides, only its deallocation.
  Block *block = contraction->getBlock();
  for (Operation *user : c.getUsers()) {
    if (user == plan.fill || user == contraction || user == plan.consumer)
      continue;
    if (auto window = dyn_cast<memref::SubViewOp>(user))
      if (consumedWindow(window, c, plan.consumer))
        continue;
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (plan.dealloc || dealloc->getBlock() != plan.alloc->getBlock())
        return std::nullopt;
      plan.dealloc = dealloc;
      continue;
    }
    if (user->getBlock() != block || !plan.consumer->isBeforeInBlock(user))
      return std::nullopt;
  }
  if (!consumerWrites)
    for (Operation *op = plan.consumer->getNextNode(); op;
         op = op->getNextNode()) {
      if (!llvm::is_contained(op->getOperands(), c))
        continue;
      auto refill = dyn_cast<linalg::FillOp>(op);
      if (!refill || refill.getDpsInits()[0] != c)
        return std::nullopt;
      break;
    }
  if (!plan.dealloc)
    return std::nullopt;
  return plan;
}

/// Whether a batch of `rows` takes the partials: an i1 computed at `builder`.
static Value partialsWorthIt(OpBuilder &builder, Location loc, Value rows,
                             int64_t slices, int64_t n) {
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  Value enough = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge,
                                       rows, constant(kPartialsMinRows));
  Value bytes =
      arith::MulIOp::create(builder, loc, rows, constant(slices * n * 4));
  Value small = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle,
                                      bytes, constant(kPartialsMaxBytes));
  return arith::AndIOp::create(builder, loc, enough, small);
}

/// The consumer again, reading the sum of the partials `[slices, M, N]`
/// where it read the product (or the same window of each partial where it
/// read a window of the product).
static void createSummingConsumer(OpBuilder &builder, PartialsPlan plan,
                                  Value partials) {
  linalg::GenericOp consumer = plan.consumer;
  Location loc = consumer.getLoc();
  Value product = plan.contraction.getDpsInits()[0];
  Value rows = memref::DimOp::create(builder, loc, product, 0);
  int64_t n = cast<MemRefType>(product.getType()).getDimSize(1);
  SmallVector<Value> sliceViews;
  for (int64_t s = 0; s < plan.slices; ++s) {
    SmallVector<OpFoldResult> offsets{builder.getIndexAttr(s),
                                      builder.getIndexAttr(0),
                                      builder.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{builder.getIndexAttr(1), rows,
                                    builder.getIndexAttr(n)};
    SmallVector<OpFoldResult> strides(3, builder.getIndexAttr(1));
    auto viewType = memref::SubViewOp::inferRankReducedResultType(
        {ShapedType::kDynamic, n}, cast<MemRefType>(partials.getType()),
        offsets, sizes, strides);
    sliceViews.push_back(
        memref::SubViewOp::create(builder, loc, cast<MemRefType>(viewType),
                                  partials, offsets, sizes, strides));
  }
  SmallVector<Value> inputs(consumer.getDpsInputs());
  SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
  // The partials of each input that read the product, inserted after it:
  // from the last such input to the first, so the earlier positions hold.
  SmallVector<unsigned> reading(llvm::reverse(plan.consumerInputs));
  for (auto [input, window] : llvm::zip(reading, llvm::reverse(plan.windows))) {
    SmallVector<Value> views;
    for (Value slice : sliceViews)
      views.push_back(window
                          ? memref::SubViewOp::create(builder, loc, slice,
                                                      window.getMixedOffsets(),
                                                      window.getMixedSizes(),
                                                      window.getMixedStrides())
                                .getResult()
                          : slice);
    inputs[input] = views.front();
    inputs.insert(inputs.begin() + input + 1, views.begin() + 1, views.end());
    maps.insert(maps.begin() + input + 1, plan.slices - 1, maps[input]);
  }
  auto summing = linalg::GenericOp::create(builder, loc, TypeRange{}, inputs,
                                           consumer.getDpsInits(), maps,
                                           consumer.getIteratorTypesArray());
  summing->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
  IRMapping mapping;
  consumer.getRegion().cloneInto(&summing.getRegion(), mapping);
  Block &body = summing.getRegion().front();
  OpBuilder bodyBuilder = OpBuilder::atBlockBegin(&body);
  for (unsigned input : reading) {
    BlockArgument first = body.getArgument(input);
    Value sum = first;
    Operation *firstAdd = nullptr;
    for (int64_t s = 1; s < plan.slices; ++s) {
      Value other = body.insertArgument(input + s, first.getType(), loc);
      auto add = arith::AddFOp::create(bodyBuilder, loc, sum, other);
      firstAdd = firstAdd ? firstAdd : add.getOperation();
      sum = add;
    }
    first.replaceAllUsesExcept(sum, firstAdd);
  }
}

/// Rewrites one planned product: the partials buffer beside the product's
/// allocation, then under a check of the batch the partials call and the
/// summing consumer, else the product and consumer as they were.
static void splitIntoPartials(PartialsPlan plan, func::FuncOp callee,
                              int32_t layoutFlags) {
  linalg::GenericOp contraction = plan.contraction;
  Location loc = contraction.getLoc();
  Value a = contraction.getDpsInputs()[0], b = contraction.getDpsInputs()[1];
  Value c = contraction.getDpsInits()[0];
  auto cType = cast<MemRefType>(c.getType());
  int64_t n = cType.getDimSize(1);
  Type i64 = IntegerType::get(contraction.getContext(), 64);

  // [slices, M, N], empty for batches that do not take the partials.
  OpBuilder builder(plan.alloc->getBlock(), ++Block::iterator(plan.alloc));
  Value rows = memref::DimOp::create(builder, loc, c, 0);
  Value sliceCount = arith::SelectOp::create(
      builder, loc, partialsWorthIt(builder, loc, rows, plan.slices, n),
      arith::ConstantIndexOp::create(builder, loc, plan.slices),
      arith::ConstantIndexOp::create(builder, loc, 0));
  auto partialsType = MemRefType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, n}, cType.getElementType());
  Value partials = memref::AllocOp::create(builder, loc, partialsType,
                                           ValueRange{sliceCount, rows},
                                           plan.alloc.getAlignmentAttr());
  builder.setInsertionPointAfter(plan.dealloc);
  memref::DeallocOp::create(builder, loc, partials);

  // The pure ops between the fill and the consumer go first, in order (so
  // each still follows what it uses), so that the fill, the product and the
  // consumer can move into the branches together.
  for (Operation *op = plan.fill->getNextNode(); op != plan.consumer;) {
    Operation *pure = op;
    op = op->getNextNode();
    if (pure != contraction.getOperation())
      pure->moveBefore(plan.fill);
  }
  builder.setInsertionPoint(plan.fill);
  Value stepRows = memref::DimOp::create(builder, loc, c, 0);
  auto branch = scf::IfOp::create(
      builder, loc, partialsWorthIt(builder, loc, stepRows, plan.slices, n),
      /*withElse=*/true);
  builder.setInsertionPointToStart(&branch.getElseRegion().front());
  for (Operation *op : {plan.fill.getOperation(), contraction.getOperation(),
                        plan.consumer.getOperation()})
    builder.clone(*op);

  builder.setInsertionPointToStart(&branch.getThenRegion().front());
  auto aType = cast<MemRefType>(a.getType());
  auto [aAddr, lda] = addressAndRowStride(builder, loc, a);
  auto [bAddr, ldb] = addressAndRowStride(builder, loc, b);
  Value pAddr = arith::IndexCastOp::create(
      builder, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, partials));
  auto i32Constant = [&](int32_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };
  auto i64Constant = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 64);
  };
  Value m = arith::IndexCastOp::create(builder, loc, i64, stepRows);
  int64_t k = cast<MemRefType>(b.getType()).getDimSize(1);
  func::CallOp::create(
      builder, loc, callee,
      ValueRange{i32Constant(dtypeCode(aType.getElementType())),
                 i32Constant(dtypeCode(cType.getElementType())),
                 i32Constant(layoutFlags), i64Constant(plan.slices), m,
                 i64Constant(n), i64Constant(k), aAddr, lda, bAddr, ldb, pAddr,
                 i64Constant(n)});
  createSummingConsumer(builder, plan, partials);

  plan.consumer.erase();
  contraction.erase();
  plan.fill.erase();
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
