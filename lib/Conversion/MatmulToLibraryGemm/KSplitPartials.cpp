//===- KSplitPartials.cpp - Products split into K-slice partials ----------===//
//
// convert-matmul-to-library-gemm{k-partials}: a recurrent product whose one
// reader is an elementwise kernel is computed as K-slice partial products
// (one strided-batched GEMM, no split-K reduction kernel) that the kernel
// adds up as it reads them. Two forms: the reader follows the product in
// the same step (a two-stage cell's second stage), or the product ends a
// loop body and the reader begins the next step (a backward's recurrent
// gradient, loop-carried through a buffer defined outside the loop).
//
//===----------------------------------------------------------------------===//

#include "KSplitPartials.h"
#include "GemmOperands.h"

#include "rnn/Conversion/Passes.h"

#include "../BufferViews.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace rnn::gemm;

/// Limits of the K-split (Passes.td): products worth splitting, and batches
/// whose partials stay cheap.
constexpr int64_t kPartialsMinK = 1024, kPartialsMaxN = 2048;
constexpr int64_t kPartialsMinRows = 16, kPartialsMaxBytes = 16 << 20;
/// Across the back edge, partials of at most 2 MiB a step: at 4 MiB (B = 256,
/// H = 512) the LSTM's training step lost 3% in bf16 and 1% in fp32 while the
/// GRU's gained 0% and 5%; at 2 MiB and under each gained 2-24% (H200,
/// docs/performance-notes.md).
constexpr int64_t kCarriedPartialsMaxBytes = 2 << 20;

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

/// The product's N and K: B is [N, K] (layout 0) or [K, N] (layout 1).
static std::pair<int64_t, int64_t> productSizes(linalg::GenericOp contraction) {
  auto bType = cast<MemRefType>(contraction.getDpsInputs()[1].getType());
  bool kn = contraction->getAttrOfType<IntegerAttr>(rnn::kGemmWeightLayoutAttr)
                .getInt() == 1;
  return kn ? std::make_pair(bType.getDimSize(1), bType.getDimSize(0))
            : std::make_pair(bType.getDimSize(0), bType.getDimSize(1));
}

/// The number of K slices to split `contraction`'s product into, or 0 where
/// its operands do not qualify: 2-D, a static B of layout 0 (or 1 where
/// `allowKN`), a packed f32 result, K >= kPartialsMinK, N <= kPartialsMaxN.
static int64_t sliceCount(linalg::GenericOp contraction, int64_t kPartials,
                          bool allowKN) {
  if (kPartials < 2 || !contraction.hasPureBufferSemantics())
    return 0;
  auto layout =
      contraction->getAttrOfType<IntegerAttr>(rnn::kGemmWeightLayoutAttr);
  if (!layout || (layout.getInt() != 0 && !(allowKN && layout.getInt() == 1)))
    return 0;
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
    return 0;
  auto [n, k] = productSizes(contraction);
  // Half the slices past N / 2 for 16-bit operands, which cuBLAS runs (its
  // strided-batched GEMM was faster so); the CUDA runtime's own kernel takes
  // f32 products at every N with the same slices.
  bool halve = n > kPartialsMaxN / 2 && !aType.getElementType().isF32();
  int64_t slices = halve ? std::max<int64_t>(2, kPartials / 2) : kPartials;
  if (k < kPartialsMinK || n > kPartialsMaxN || k % slices != 0 ||
      cType.getDimSize(1) != n)
    return 0;
  return slices;
}

/// The plan for a product that its consumer reads later in the same step.
static std::optional<PartialsPlan> planInStep(linalg::GenericOp contraction,
                                              int64_t kPartials) {
  int64_t slices = sliceCount(contraction, kPartials, /*allowKN=*/false);
  if (!slices)
    return std::nullopt;
  Value c = contraction.getDpsInits()[0];
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

/// The plan for a product that ends a loop body and that its consumer reads
/// in the next step: the contraction is the last op in the body to touch its
/// result, a buffer defined outside the loop; before it in the body, one
/// all-parallel elementwise generic reads the buffer through identity maps;
/// nothing else in the loop uses it. Either the contraction overwrites the
/// buffer (a dead zero fill before it) and the consumer does not write it,
/// or the contraction adds onto it and the consumer overwrites all of it
/// (the GRU's direct path `dh·z`, then `+ dG·U`), without reading what it
/// overwrites. What the buffer holds before the loop is what the first step
/// reads; what the last step left is what it holds after.
static std::optional<PartialsPlan>
planLoopCarried(linalg::GenericOp contraction, int64_t kPartials) {
  auto loop = dyn_cast<scf::ForOp>(contraction->getParentOp());
  if (!loop)
    return std::nullopt;
  int64_t slices = sliceCount(contraction, kPartials, /*allowKN=*/true);
  Value c = contraction.getDpsInits()[0];
  if (!slices || !loop.isDefinedOutsideOfLoop(c) ||
      rnn::rootBuffer(contraction.getDpsInputs()[0]) == rnn::rootBuffer(c) ||
      rnn::rootBuffer(contraction.getDpsInputs()[1]) == rnn::rootBuffer(c))
    return std::nullopt;
  PartialsPlan plan;
  plan.contraction = contraction;
  plan.slices = slices;
  plan.loop = loop;
  plan.fill = findDeadZeroFill(contraction, c);
  plan.accumulates = !plan.fill;
  for (Operation *user : c.getUsers()) {
    if (!loop->isProperAncestor(user) || user == plan.fill ||
        user == contraction || user == plan.consumer)
      continue;
    auto consumer = dyn_cast<linalg::GenericOp>(user);
    if (!consumer || plan.consumer ||
        consumer->getBlock() != contraction->getBlock() ||
        !consumer->isBeforeInBlock(plan.fill ? plan.fill.getOperation()
                                             : contraction.getOperation()))
      return std::nullopt;
    plan.consumer = consumer;
  }
  if (!plan.consumer || !plan.consumer.hasPureBufferSemantics() ||
      plan.consumer.getNumLoops() != 2 ||
      plan.consumer.getNumParallelLoops() != 2)
    return std::nullopt;
  // Nothing in the loop may see the buffer another way (a view of it, a
  // value of the same root buffer, a loop-carried argument): inside the loop
  // it no longer holds the product.
  Value root = rnn::rootBuffer(c);
  for (Value init : loop.getInitArgs())
    if (isa<MemRefType>(init.getType()) && rnn::rootBuffer(init) == root)
      return std::nullopt;
  WalkResult aliased = loop.getBody()->walk([&](Operation *op) {
    bool direct = op == plan.fill.getOperation() ||
                  op == contraction.getOperation() ||
                  op == plan.consumer.getOperation();
    for (Value operand : op->getOperands())
      if (isa<MemRefType>(operand.getType()) &&
          rnn::rootBuffer(operand) == root && !(direct && operand == c))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (aliased.wasInterrupted())
    return std::nullopt;
  bool consumerWrites = false;
  for (OpOperand &init : plan.consumer.getDpsInitsMutable()) {
    if (init.get() != c)
      continue;
    if (consumerWrites || !plan.accumulates ||
        !plan.consumer.getMatchingIndexingMap(&init).isIdentity() ||
        plan.consumer.payloadUsesValueFromOperand(&init))
      return std::nullopt;
    consumerWrites = true;
  }
  if (plan.accumulates != consumerWrites)
    return std::nullopt;
  for (OpOperand *input : plan.consumer.getDpsInputOperands()) {
    if (input->get() != c)
      continue;
    if (!plan.consumer.getMatchingIndexingMap(input).isIdentity())
      return std::nullopt;
    plan.consumerInputs.push_back(input->getOperandNumber());
    plan.windows.push_back(memref::SubViewOp());
  }
  if (plan.consumerInputs.empty())
    return std::nullopt;
  return plan;
}

std::optional<PartialsPlan>
rnn::gemm::planPartials(linalg::GenericOp contraction, int64_t kPartials) {
  if (std::optional<PartialsPlan> plan = planInStep(contraction, kPartials))
    return plan;
  return planLoopCarried(contraction, kPartials);
}

/// Whether a batch of `rows` takes the partials (at least kPartialsMinRows
/// rows, at most `maxBytes` of them): an i1 computed at `builder`.
static Value partialsWorthIt(OpBuilder &builder, Location loc, Value rows,
                             int64_t slices, int64_t n, int64_t maxBytes) {
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  Value enough = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge,
                                       rows, constant(kPartialsMinRows));
  Value bytes =
      arith::MulIOp::create(builder, loc, rows, constant(slices * n * 4));
  Value small = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sle,
                                      bytes, constant(maxBytes));
  return arith::AndIOp::create(builder, loc, enough, small);
}

/// Slice `s` of the partials `[slices, M, N]`: an `[M, N]` view.
static Value partialSlice(OpBuilder &builder, Location loc, Value partials,
                          int64_t s, Value rows, int64_t n) {
  SmallVector<OpFoldResult> offsets{builder.getIndexAttr(s),
                                    builder.getIndexAttr(0),
                                    builder.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{builder.getIndexAttr(1), rows,
                                  builder.getIndexAttr(n)};
  SmallVector<OpFoldResult> strides(3, builder.getIndexAttr(1));
  auto viewType = memref::SubViewOp::inferRankReducedResultType(
      {ShapedType::kDynamic, n}, cast<MemRefType>(partials.getType()), offsets,
      sizes, strides);
  return memref::SubViewOp::create(builder, loc, cast<MemRefType>(viewType),
                                   partials, offsets, sizes, strides);
}

/// The consumer again, reading the sum of the partials `[slices, M, N]`
/// where it read the product (or the same window of each partial where it
/// read a window of the product); where the product accumulates onto what
/// the consumer wrote in the step before (`plan.accumulates`), that value
/// plus the partials.
static void createSummingConsumer(OpBuilder &builder, PartialsPlan plan,
                                  Value partials) {
  linalg::GenericOp consumer = plan.consumer;
  Location loc = consumer.getLoc();
  Value product = plan.contraction.getDpsInits()[0];
  Value rows = memref::DimOp::create(builder, loc, product, 0);
  int64_t n = cast<MemRefType>(product.getType()).getDimSize(1);
  SmallVector<Value> sliceViews;
  for (int64_t s = 0; s < plan.slices; ++s)
    sliceViews.push_back(partialSlice(builder, loc, partials, s, rows, n));
  SmallVector<Value> inputs(consumer.getDpsInputs());
  SmallVector<AffineMap> maps = consumer.getIndexingMapsArray();
  // The partials of each input that read the product, inserted after it:
  // from the last such input to the first, so the earlier positions hold.
  SmallVector<unsigned> reading(llvm::reverse(plan.consumerInputs));
  for (auto [input, window] : llvm::zip(reading, llvm::reverse(plan.windows))) {
    SmallVector<Value> views;
    if (plan.accumulates)
      views.push_back(inputs[input]);
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
    maps.insert(maps.begin() + input + 1, views.size() - 1, maps[input]);
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
    int64_t terms = plan.slices + (plan.accumulates ? 1 : 0);
    for (int64_t s = 1; s < terms; ++s) {
      Value other = body.insertArgument(input + s, first.getType(), loc);
      auto add = arith::AddFOp::create(bodyBuilder, loc, sum, other);
      firstAdd = firstAdd ? firstAdd : add.getOperation();
      sum = add;
    }
    first.replaceAllUsesExcept(sum, firstAdd);
  }
}

/// The partials buffer `[slices, M, N]` for the product's `rows`, empty for
/// batches that do not take the partials (`worth` false).
static Value allocatePartials(OpBuilder &builder, Location loc,
                              PartialsPlan plan, Value worth, Value rows,
                              IntegerAttr alignment) {
  auto cType = cast<MemRefType>(plan.contraction.getDpsInits()[0].getType());
  Value allocated = arith::SelectOp::create(
      builder, loc, worth,
      arith::ConstantIndexOp::create(builder, loc, plan.slices),
      arith::ConstantIndexOp::create(builder, loc, 0));
  auto partialsType = MemRefType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, cType.getDimSize(1)},
      cType.getElementType());
  return memref::AllocOp::create(builder, loc, partialsType,
                                 ValueRange{allocated, rows}, alignment);
}

/// The call that writes the product's partials into `partials`, at
/// `builder`, for `rows` rows.
static void createPartialsCall(OpBuilder &builder, PartialsPlan plan,
                               func::FuncOp callee, int32_t layoutFlags,
                               Value partials, Value rows) {
  linalg::GenericOp contraction = plan.contraction;
  Location loc = contraction.getLoc();
  Value a = contraction.getDpsInputs()[0], b = contraction.getDpsInputs()[1];
  auto cType = cast<MemRefType>(contraction.getDpsInits()[0].getType());
  Type i64 = builder.getI64Type();
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
  Value m = arith::IndexCastOp::create(builder, loc, i64, rows);
  auto [n, k] = productSizes(contraction);
  func::CallOp::create(
      builder, loc, callee,
      ValueRange{i32Constant(
                     dtypeCode(cast<MemRefType>(a.getType()).getElementType())),
                 i32Constant(dtypeCode(cType.getElementType())),
                 i32Constant(layoutFlags), i64Constant(plan.slices), m,
                 i64Constant(n), i64Constant(k), aAddr, lda, bAddr, ldb, pAddr,
                 i64Constant(n)});
}

/// Moves the ops between the plan's fill and `end` but the contraction (pure
/// ones: findDeadZeroFill saw no memory effect between the fill and the
/// product) ahead of the fill, in order, so each still follows what it uses.
static void moveAheadOfFill(PartialsPlan &plan, Operation *end) {
  for (Operation *op = plan.fill->getNextNode(); op != end;) {
    Operation *pure = op;
    op = op->getNextNode();
    if (pure != plan.contraction.getOperation())
      pure->moveBefore(plan.fill);
  }
}

/// The in-step form: the partials buffer beside the product's allocation,
/// then under a check of the batch the partials call and the summing
/// consumer, else the product and consumer as they were.
static void splitInStep(PartialsPlan plan, func::FuncOp callee,
                        int32_t layoutFlags) {
  linalg::GenericOp contraction = plan.contraction;
  Location loc = contraction.getLoc();
  Value c = contraction.getDpsInits()[0];
  int64_t n = cast<MemRefType>(c.getType()).getDimSize(1);

  OpBuilder builder(plan.alloc->getBlock(), ++Block::iterator(plan.alloc));
  Value rows = memref::DimOp::create(builder, loc, c, 0);
  Value partials = allocatePartials(
      builder, loc, plan,
      partialsWorthIt(builder, loc, rows, plan.slices, n, kPartialsMaxBytes),
      rows, plan.alloc.getAlignmentAttr());
  builder.setInsertionPointAfter(plan.dealloc);
  memref::DeallocOp::create(builder, loc, partials);

  // So that the fill, the product and the consumer can move into the
  // branches together.
  moveAheadOfFill(plan, plan.consumer);
  builder.setInsertionPoint(plan.fill);
  Value stepRows = memref::DimOp::create(builder, loc, c, 0);
  auto branch =
      scf::IfOp::create(builder, loc,
                        partialsWorthIt(builder, loc, stepRows, plan.slices, n,
                                        kPartialsMaxBytes),
                        /*withElse=*/true);
  builder.setInsertionPointToStart(&branch.getElseRegion().front());
  for (Operation *op : {plan.fill.getOperation(), contraction.getOperation(),
                        plan.consumer.getOperation()})
    builder.clone(*op);

  builder.setInsertionPointToStart(&branch.getThenRegion().front());
  createPartialsCall(builder, plan, callee, layoutFlags, partials, stepRows);
  createSummingConsumer(builder, plan, partials);

  plan.consumer.erase();
  contraction.erase();
  plan.fill.erase();
}

/// The loop-carried form: the partials buffer is made before the loop (zeros,
/// the first slice a copy of the product's buffer where the product
/// overwrites it), the consumer reads the sum of the slices (plus the
/// buffer where the product accumulates onto it) and the call writes them,
/// each under the check of the batch (the same every step); after the loop
/// that sum goes into the product's buffer.
static void splitLoopCarried(PartialsPlan plan, func::FuncOp callee,
                             int32_t layoutFlags) {
  linalg::GenericOp contraction = plan.contraction;
  Location loc = contraction.getLoc();
  Value c = contraction.getDpsInits()[0];
  int64_t n = cast<MemRefType>(c.getType()).getDimSize(1);
  Type f32 = cast<MemRefType>(c.getType()).getElementType();

  OpBuilder builder(plan.loop);
  Value rows = memref::DimOp::create(builder, loc, c, 0);
  Value worth = partialsWorthIt(builder, loc, rows, plan.slices, n,
                                kCarriedPartialsMaxBytes);
  Value partials = allocatePartials(builder, loc, plan, worth, rows,
                                    builder.getI64IntegerAttr(64));
  AffineMap identity = builder.getMultiDimIdentityMap(2);
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  auto before = scf::IfOp::create(builder, loc, worth, /*withElse=*/false);
  builder.setInsertionPointToStart(before.thenBlock());
  linalg::FillOp::create(
      builder, loc,
      arith::ConstantOp::create(builder, loc, f32, builder.getZeroAttr(f32))
          .getResult(),
      partials);
  if (!plan.accumulates)
    linalg::GenericOp::create(
        builder, loc, TypeRange{}, ValueRange{c},
        ValueRange{partialSlice(builder, loc, partials, 0, rows, n)},
        SmallVector<AffineMap>(2, identity), parallel,
        [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });

  builder.setInsertionPoint(plan.consumer);
  auto reading = scf::IfOp::create(builder, loc, worth, /*withElse=*/true);
  builder.setInsertionPointToStart(&reading.getElseRegion().front());
  builder.clone(*plan.consumer);
  builder.setInsertionPointToStart(&reading.getThenRegion().front());
  createSummingConsumer(builder, plan, partials);

  // So that both branches see the product's operand views.
  if (plan.fill)
    moveAheadOfFill(plan, contraction);
  builder.setInsertionPoint(plan.fill ? plan.fill.getOperation()
                                      : contraction.getOperation());
  auto product = scf::IfOp::create(builder, loc, worth, /*withElse=*/true);
  builder.setInsertionPointToStart(&product.getElseRegion().front());
  if (plan.fill)
    builder.clone(*plan.fill);
  builder.clone(*contraction);
  builder.setInsertionPointToStart(&product.getThenRegion().front());
  createPartialsCall(builder, plan, callee, layoutFlags, partials,
                     memref::DimOp::create(builder, loc, c, 0));

  builder.setInsertionPointAfter(plan.loop);
  auto after = scf::IfOp::create(builder, loc, worth, /*withElse=*/false);
  builder.setInsertionPointToStart(after.thenBlock());
  SmallVector<Value> terms;
  if (plan.accumulates)
    terms.push_back(c);
  for (int64_t s = 0; s < plan.slices; ++s)
    terms.push_back(partialSlice(builder, loc, partials, s, rows, n));
  linalg::GenericOp::create(builder, loc, TypeRange{}, terms, ValueRange{c},
                            SmallVector<AffineMap>(terms.size() + 1, identity),
                            parallel,
                            [&](OpBuilder &b, Location l, ValueRange args) {
                              Value sum = args[0];
                              for (Value term : args.drop_back().drop_front())
                                sum = arith::AddFOp::create(b, l, sum, term);
                              linalg::YieldOp::create(b, l, sum);
                            });
  builder.setInsertionPointAfter(after);
  memref::DeallocOp::create(builder, loc, partials);

  plan.consumer.erase();
  contraction.erase();
  if (plan.fill)
    plan.fill.erase();
}

void rnn::gemm::splitIntoPartials(PartialsPlan plan, func::FuncOp callee,
                                  int32_t layoutFlags) {
  if (plan.loop)
    splitLoopCarried(plan, callee, layoutFlags);
  else
    splitInStep(plan, callee, layoutFlags);
}
