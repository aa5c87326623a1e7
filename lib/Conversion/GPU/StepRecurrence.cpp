//===- StepRecurrence.cpp - A step loop as one product and one group ------===//

#include "StepRecurrence.h"

#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <array>

using namespace mlir;

namespace rnn {

Type StepRecurrence::stateElementType() const {
  return cast<MemRefType>(state.getType()).getElementType();
}

Type StepRecurrence::weightElementType() const {
  return cast<MemRefType>(weight.getType()).getElementType();
}

bool isPureScalarOp(Operation *op) {
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

bool isIdentity2D(AffineMap map) {
  return map.getNumDims() == 2 && map.isIdentity();
}

bool isColumnBroadcast(AffineMap map) {
  return map.getNumDims() == 2 && map.getNumResults() == 1 &&
         map.getResult(0) == getAffineDimExpr(1, map.getContext());
}

Value underlyingBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

bool dependsOnStep(Value value, scf::ForOp loop) {
  if (value == loop.getInductionVar())
    return true;
  Operation *def = value.getDefiningOp();
  return def && def->getBlock() == loop.getBody() &&
         llvm::any_of(def->getOperands(),
                      [&](Value v) { return dependsOnStep(v, loop); });
}

/// Whether `user` and `loop` sit in different branches of an scf.if that
/// holds both (one runs instead of the other: a block kernel and the step
/// loop it falls back to).
static bool inOtherBranch(Operation *user, scf::ForOp loop) {
  for (Operation *op = loop->getParentOp(); op; op = op->getParentOp()) {
    if (!op->isAncestor(user))
      continue;
    auto branch = dyn_cast<scf::IfOp>(op);
    return branch &&
           !branch.getThenRegion().isAncestor(user->getParentRegion()) !=
               !branch.getThenRegion().isAncestor(loop->getParentRegion());
  }
  return false;
}

bool isLoopScratch(Value buffer, scf::ForOp loop) {
  // Allocated in the loop's block (or in the block of an scf.if holding the
  // loop, as the block kernels leave it: their kernel in one branch, the
  // loop in the other), and otherwise only used by the loop, by ops before
  // it that are not views (nothing can read it through an alias later), by
  // the other branch, or freed. The kernels leave behind only what the
  // pointwise group writes, so anything else would be stale afterwards.
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return false;
  Operation *holder = alloc->getBlock()->findAncestorOpInBlock(*loop);
  if (!holder)
    return false;
  // Only scf.ifs between: a loop around the time loop would run it again on
  // what it left in the buffer.
  for (Operation *op = loop->getParentOp(); op && op != holder->getParentOp();
       op = op->getParentOp())
    if (!isa<scf::IfOp>(op))
      return false;
  return llvm::all_of(buffer.getUsers(), [&](Operation *user) {
    if (loop->isAncestor(user) || isa<memref::DeallocOp>(user) ||
        inOtherBranch(user, loop))
      return true;
    return user->getBlock() == holder->getBlock() &&
           user->isBeforeInBlock(holder) && !isa<ViewLikeOpInterface>(user);
  });
}

} // namespace rnn

using namespace rnn;

/// The gate whose columns `view` selects of `source` ([*, q*H] to
/// [*, q*H + H), unit strides), if it is such a view.
static std::optional<int64_t> gateOfView(Value view, Value source,
                                         int64_t hidden) {
  // One gate: the group may read the whole product.
  if (view == source &&
      cast<MemRefType>(view.getType()).getDimSize(1) == hidden)
    return 0;
  auto subview = view.getDefiningOp<memref::SubViewOp>();
  if (!subview || subview.getSource() != source)
    return std::nullopt;
  ArrayRef<int64_t> offsets = subview.getStaticOffsets();
  ArrayRef<int64_t> sizes = subview.getStaticSizes();
  ArrayRef<int64_t> strides = subview.getStaticStrides();
  if (offsets.size() != 2 || offsets[0] != 0 ||
      ShapedType::isDynamic(offsets[1]) || sizes[1] != hidden ||
      strides[0] != 1 || strides[1] != 1 || offsets[1] % hidden != 0)
    return std::nullopt;
  return offsets[1] / hidden;
}

/// Whether every op inside `loop` that `value` depends on is a view or a
/// pure scalar op (so a kernel can rebuild it from the step index), and
/// it does not depend on any of `excluded`.
static bool rebuildableInKernel(Value value, scf::ForOp loop,
                                ArrayRef<Value> excluded) {
  if (llvm::is_contained(excluded, value))
    return false;
  if (loop.isDefinedOutsideOfLoop(value) || value == loop.getInductionVar())
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody() ||
      !(isa<memref::SubViewOp>(def) || isPureScalarOp(def)))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return rebuildableInKernel(operand, loop, excluded);
  });
}

/// Whether `body` is a product's: out += ext(a) * ext(w) in f32, the
/// extensions present for bf16/f16 operands and absent for f32 ones.
static bool isProductBody(Block &body) {
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value accumulator = body.getArgument(2);
  if (add.getLhs() != accumulator && add.getRhs() != accumulator)
    return false;
  Value product = add.getLhs() == accumulator ? add.getRhs() : add.getLhs();
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul || !accumulator.getType().isF32())
    return false;
  auto readsArg = [](Value v, Value arg) {
    if (v == arg)
      return arg.getType().isF32();
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return ext && ext.getIn() == arg;
  };
  Value a = body.getArgument(0), w = body.getArgument(1);
  if (a.getType() != w.getType())
    return false;
  unsigned extensions = a.getType().isF32() ? 0 : 2;
  return body.getOperations().size() == 3 + extensions &&
         ((readsArg(mul.getLhs(), a) && readsArg(mul.getRhs(), w)) ||
          (readsArg(mul.getLhs(), w) && readsArg(mul.getRhs(), a)));
}

/// Whether `matmul` is the contraction convert-rnn-to-linalg makes of an
/// rnn.matmul: out[m, n] += a[m, k] * w[n, k] for an [N, K] weight, or
/// w[k, n] for a [K, N] one (`weightInOut`).
static bool isTwoDimContraction(linalg::GenericOp matmul, bool weightInOut) {
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  using Exprs = ArrayRef<AffineExpr>;
  SmallVector<AffineMap> maps = AffineMap::inferFromExprList(
      ArrayRef<Exprs>{Exprs{m, k}, weightInOut ? Exprs{k, n} : Exprs{n, k},
                      Exprs{m, n}},
      ctx);
  using utils::IteratorType;
  return matmul.getNumDpsInputs() == 2 && matmul.getNumDpsInits() == 1 &&
         matmul.getIndexingMapsArray() == maps &&
         matmul.getIteratorTypesArray() ==
             SmallVector<IteratorType>{IteratorType::parallel,
                                       IteratorType::parallel,
                                       IteratorType::reduction} &&
         isProductBody(matmul.getRegion().front());
}

/// Whether `matmul` is the generic convert-rnn-to-linalg makes of an
/// rnn.headwise_matmul (not as GEMMs): out[b, g, h, n] += x[b, h, k] *
/// w[h, g, n, k].
static bool isHeadwiseContraction(linalg::GenericOp matmul) {
  MLIRContext *ctx = matmul.getContext();
  AffineExpr b, h, g, n, k;
  bindDims(ctx, b, h, g, n, k);
  using Exprs = ArrayRef<AffineExpr>;
  SmallVector<AffineMap> maps = AffineMap::inferFromExprList(
      ArrayRef<Exprs>{Exprs{b, h, k}, Exprs{h, g, n, k}, Exprs{b, g, h, n}},
      ctx);
  using utils::IteratorType;
  SmallVector<IteratorType> iterators(4, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);
  return matmul.getNumDpsInputs() == 2 && matmul.getNumDpsInits() == 1 &&
         matmul.getIndexingMapsArray() == maps &&
         matmul.getIteratorTypesArray() == iterators &&
         isProductBody(matmul.getRegion().front());
}

/// The source of `value` if it is a memref.expand_shape splitting dimension
/// `split` (in two) of a rank-`rank` identity-layout buffer defined outside
/// `loop`.
static Value expandedFromOutside(Value value, scf::ForOp loop, int64_t rank,
                                 int64_t split) {
  auto expand = value.getDefiningOp<memref::ExpandShapeOp>();
  if (!expand || expand.getSrcType().getRank() != rank ||
      !expand.getSrcType().getLayout().isIdentity() ||
      !loop.isDefinedOutsideOfLoop(expand.getSrc()))
    return nullptr;
  SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
  for (int64_t d = 0; d < rank; ++d)
    if (groups[d].size() != (d == split ? 2u : 1u))
      return nullptr;
  return expand.getSrc();
}

/// Fills the product's fields of `r` from `matmul`: S, the weight, the
/// product's buffer and what the gate views slice, gates, heads. The
/// weight must be a [G*H, H] buffer of its own (the kernels read it from its
/// base address) unless `weightCopied` (the kernel's set-up copies it: a
/// view of one, or a [H, G*H] weight it transposes).
static LogicalResult matchProduct(StepRecurrence &r,
                                  bool weightCopied = false) {
  linalg::GenericOp matmul = r.matmul;
  scf::ForOp loop = r.loop;
  if (matmul.getNumDpsInputs() != 2 || matmul.getNumDpsInits() != 1)
    return failure();
  r.product = matmul.getDpsInits()[0];
  if (!r.headwise) {
    auto layout = matmul->getAttrOfType<IntegerAttr>(kGemmWeightLayoutAttr);
    r.weightInOut = weightCopied && layout && layout.getInt() == 1;
    if (!layout || (layout.getInt() != 0 && !r.weightInOut) ||
        !isTwoDimContraction(matmul, r.weightInOut))
      return failure();
    r.state = matmul.getDpsInputs()[0];
    r.weight = matmul.getDpsInputs()[1];
    r.gateSource = r.product;
  } else {
    // S [B, NH*N] as [B, NH, N]; the weight [NH, G*N, N] as [NH, G, N, N].
    r.state = expandedFromOutside(matmul.getDpsInputs()[0], loop, 2, 1);
    r.weight = expandedFromOutside(matmul.getDpsInputs()[1], loop, 3, 1);
    if (!r.state || !r.weight)
      return failure();
    // The group reads the product collapsed back to [B, G*H].
    for (Operation *user : r.product.getUsers()) {
      auto collapse = dyn_cast<memref::CollapseShapeOp>(user);
      if (!collapse || collapse->getBlock() != loop.getBody())
        continue;
      if (r.gateSource || collapse.getResultType().getRank() != 2)
        return failure();
      r.gateSource = collapse;
    }
    if (!r.gateSource)
      return failure();
  }
  auto stateType = dyn_cast<MemRefType>(r.state.getType());
  auto weightType = dyn_cast<MemRefType>(r.weight.getType());
  auto productType = dyn_cast<MemRefType>(r.product.getType());
  if (!stateType || !weightType || !productType || stateType.getRank() != 2 ||
      !productType.getElementType().isF32() ||
      !stateType.getLayout().isIdentity() ||
      (!weightCopied && !weightType.getLayout().isIdentity()) ||
      !weightType.hasStaticShape() || stateType.isDynamicDim(1) ||
      !loop.isDefinedOutsideOfLoop(r.state) ||
      !loop.isDefinedOutsideOfLoop(r.weight) ||
      stateType.getElementType() != weightType.getElementType() ||
      !isa<Float32Type, BFloat16Type, Float16Type>(stateType.getElementType()))
    return failure();
  r.hidden = stateType.getDimSize(1);
  if (!r.headwise) {
    // [G*H, H], or [H, G*H] read as its transpose.
    int64_t k = weightType.getDimSize(r.weightInOut ? 0 : 1),
            n = weightType.getDimSize(r.weightInOut ? 1 : 0);
    if (weightType.getRank() != 2 || k != r.hidden || n % r.hidden != 0 ||
        productType.getRank() != 2)
      return failure();
    r.gates = n / r.hidden;
    r.headSize = r.hidden;
    return success();
  }
  // [NH, G*N, N], the product [B, G, NH, N], S's columns NH*N.
  if (weightType.getRank() != 3 || productType.getRank() != 4)
    return failure();
  r.heads = weightType.getDimSize(0);
  r.headSize = weightType.getDimSize(2);
  ArrayRef<int64_t> viewShape =
      cast<MemRefType>(matmul.getDpsInputs()[1].getType()).getShape();
  r.gates = viewShape[1];
  if (viewShape[2] != r.headSize || r.heads * r.headSize != r.hidden ||
      productType.getDimSize(1) != r.gates ||
      productType.getDimSize(2) != r.heads ||
      productType.getDimSize(3) != r.headSize ||
      !productType.getLayout().isIdentity())
    return failure();
  return success();
}

/// Where element (i, j) of the 2-D `view` lies in its buffer, up to the
/// dimensions the views drop (the time axis, at any offset): the buffer's
/// dimensions of i and j and their offsets. None where a view is not a
/// subview of unit strides with static offsets along i and j.
static std::optional<std::array<int64_t, 4>> elementPlacement(Value view) {
  std::array<int64_t, 4> placement = {0, 1, 0, 0};
  while (auto source = view.getDefiningOp<ViewLikeOpInterface>()) {
    auto subview = dyn_cast<memref::SubViewOp>(source.getOperation());
    if (!subview || !llvm::all_of(subview.getStaticStrides(),
                                  [](int64_t s) { return s == 1; }))
      return std::nullopt;
    // The source dimension of each of the view's dimensions.
    llvm::SmallBitVector dropped = subview.getDroppedDims();
    SmallVector<int64_t> sourceDim;
    for (unsigned dim = 0; dim < dropped.size(); ++dim)
      if (!dropped.test(dim))
        sourceDim.push_back(dim);
    ArrayRef<int64_t> offsets = subview.getStaticOffsets();
    for (int k = 0; k < 2; ++k) {
      int64_t dim = sourceDim[placement[k]];
      if (ShapedType::isDynamic(offsets[dim]))
        return std::nullopt;
      placement[k] = dim;
      placement[2 + k] += offsets[dim];
    }
    view = subview.getSource();
  }
  return placement;
}

/// Whether the groups `groups` read each of the buffers `roots` (but
/// `excluded`) only at elements the reading thread writes: through identity
/// maps and views (hoisted out of the loop or not) that place element
/// (i, j) where one of the groups' writes of the buffer places it (a group
/// may write several windows of a buffer, such as the gate gradients'
/// columns of a step's row).
static bool accessesElementwise(ArrayRef<linalg::GenericOp> groups,
                                ArrayRef<Value> roots, Value excluded) {
  for (Value root : roots) {
    SmallVector<std::array<int64_t, 4>> writes;
    for (linalg::GenericOp pw : groups)
      for (OpOperand &init : pw.getDpsInitsMutable()) {
        Value value = init.get();
        if (value == excluded || underlyingBuffer(value) != root)
          continue;
        std::optional<std::array<int64_t, 4>> at = elementPlacement(value);
        if (!isIdentity2D(pw.getMatchingIndexingMap(&init)) || !at)
          return false;
        writes.push_back(*at);
      }
    for (linalg::GenericOp pw : groups)
      for (OpOperand *input : pw.getDpsInputOperands()) {
        Value value = input->get();
        if (value == excluded || underlyingBuffer(value) != root)
          continue;
        std::optional<std::array<int64_t, 4>> at = elementPlacement(value);
        if (!isIdentity2D(pw.getMatchingIndexingMap(input)) || !at ||
            !llvm::is_contained(writes, *at))
          return false;
      }
  }
  return true;
}

/// Whether every buffer `pw` writes (but `excluded`) is read and written by
/// it only at the element each thread writes.
static bool readsWrittenBuffersElementwise(linalg::GenericOp pw,
                                           Value excluded) {
  SmallVector<Value> writtenRoots;
  for (Value init : pw.getDpsInits())
    if (init != excluded)
      writtenRoots.push_back(underlyingBuffer(init));
  return accessesElementwise({pw}, writtenRoots, excluded);
}

/// Whether the body of `pw` is scalar ops on its arguments and on values
/// from outside `loop` (which a launch captures).
static bool hasClonableBody(linalg::GenericOp pw, scf::ForOp loop) {
  for (Operation &op : pw.getBody()->without_terminator())
    if (!isPureScalarOp(&op) || isa<linalg::IndexOp>(op) ||
        llvm::any_of(op.getOperands(), [&](Value v) {
          return !pw->isAncestor(v.getParentRegion()->getParentOp()) &&
                 !loop.isDefinedOutsideOfLoop(v);
        }))
      return false;
  return true;
}

/// Whether `pw` is a pointwise group over [B, `hidden`].
static bool isGroupOverUnits(linalg::GenericOp pw, int64_t hidden) {
  return pw.getNumLoops() == 2 && pw.getNumParallelLoops() == 2 &&
         pw.getStaticLoopRanges()[1] == hidden;
}

/// Records in `r.gateOfOperand` whether `operand` of r's group reads one of
/// the product's gate windows, and returns it; fails where it reads one
/// otherwise than as an identity-mapped input of a gate the product has
/// (or, where the product accumulates onto the step's projection, through
/// a view the kernel cannot rebuild).
static FailureOr<bool> matchGateOperand(StepRecurrence &r, OpOperand &operand) {
  linalg::GenericOp pw = r.pointwise;
  Value value = operand.get();
  std::optional<int64_t> gate = gateOfView(value, r.gateSource, r.hidden);
  r.gateOfOperand.push_back(gate);
  if (!gate)
    return false;
  if (!pw.isDpsInput(&operand) ||
      !isIdentity2D(pw.getMatchingIndexingMap(&operand)) || *gate >= r.gates ||
      (r.accumulates && !rebuildableInKernel(value, r.loop, {})))
    return failure();
  return true;
}

FailureOr<StepRecurrence> rnn::matchStepRecurrence(scf::ForOp loop) {
  StepRecurrence r;
  r.loop = loop;
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()) || loop.getNumResults() != 0)
    return failure();
  linalg::FillOp fill;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      bool headwise = isHeadwiseContraction(generic);
      if (generic->hasAttr(kGemmWeightLayoutAttr) || headwise) {
        if (r.matmul || r.pointwise)
          return failure();
        r.matmul = generic;
        r.headwise = headwise;
      } else {
        if (!r.matmul || r.pointwise)
          return failure();
        r.pointwise = generic;
      }
    } else if (auto f = dyn_cast<linalg::FillOp>(op)) {
      if (fill || r.matmul)
        return failure();
      fill = f;
    } else if (!isa<memref::SubViewOp, memref::ExpandShapeOp,
                    memref::CollapseShapeOp>(op) &&
               !isPureScalarOp(&op)) {
      return failure();
    }
  }
  if (!r.matmul || !r.pointwise || failed(matchProduct(r)))
    return failure();

  if (fill) {
    // A zeroed product buffer of the loop's own.
    if (fill.getOutputs()[0] != r.product ||
        !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
        !loop.isDefinedOutsideOfLoop(r.product))
      return failure();
    r.fill = fill;
  } else {
    // The product accumulates onto the step's projection.
    r.accumulates = true;
    if (r.headwise || loop.isDefinedOutsideOfLoop(r.product))
      return failure();
  }
  // The kernels never store the product: its buffer must be the loop's own
  // scratch (the step loop leaves the last step's product in it), and an
  // accumulating product a new window of it every step.
  Value productRoot = underlyingBuffer(r.product);
  if (!isLoopScratch(productRoot, loop) ||
      (r.accumulates && !dependsOnStep(r.product, loop)))
    return failure();
  Value stateRoot = underlyingBuffer(r.state);

  // The pointwise group: elementwise over [B, H], S written once.
  linalg::GenericOp pw = r.pointwise;
  if (!isGroupOverUnits(pw, r.hidden))
    return failure();
  unsigned stateWrites = 0;
  for (OpOperand &operand : pw->getOpOperands()) {
    Value value = operand.get();
    AffineMap map = pw.getMatchingIndexingMap(&operand);
    bool isInput = pw.isDpsInput(&operand);
    FailureOr<bool> gate = matchGateOperand(r, operand);
    if (failed(gate))
      return failure();
    if (*gate)
      continue;
    // Every element is the thread's own: what it writes, it alone reads.
    if (!isIdentity2D(map) && (!isInput || !isColumnBroadcast(map)))
      return failure();
    if (value == r.state) {
      if (!isIdentity2D(map))
        return failure();
      stateWrites += !isInput;
      continue;
    }
    // Anything else is rebuilt in the kernel from the step index; S and P
    // (or views of them) only through the two cases above.
    Value root = underlyingBuffer(value);
    if (root == stateRoot || root == productRoot ||
        !rebuildableInKernel(value, loop, {r.product, r.state}))
      return failure();
  }
  if (stateWrites != 1)
    return failure();
  // A buffer the group writes may be read by it only at the element each
  // thread writes (a state that lives in its output sequence reads the row
  // the last step wrote). The product's buffer is not written at all.
  for (Value init : pw.getDpsInits())
    if (underlyingBuffer(init) == productRoot)
      return failure();
  if (!readsWrittenBuffersElementwise(pw, r.state) ||
      !hasClonableBody(pw, loop))
    return failure();
  // Nothing else in the loop touches S or P: S only through the product
  // (and its head-wise view) and the group, P through the gate views the
  // group alone reads (and the sizes of the collapsed head-wise product).
  auto onlyProduct = [&](Operation *user) {
    return user == r.matmul.getOperation() ||
           (r.headwise && user->getBlock() == loop.getBody() &&
            isa<memref::ExpandShapeOp>(user) &&
            llvm::all_of(user->getUsers(), [&](Operation *u) {
              return u == r.matmul.getOperation();
            }));
  };
  for (Operation *user : r.state.getUsers())
    if (loop->isAncestor(user) && !onlyProduct(user) && user != r.pointwise)
      return failure();
  for (Operation *user : r.gateSource.getUsers()) {
    if (!loop->isAncestor(user) || user == r.matmul ||
        user == fill.getOperation() || user == r.gateSource.getDefiningOp())
      continue;
    // Sizes; a one-gate product the group reads whole (checked above).
    if (isa<memref::DimOp>(user) || user == r.pointwise.getOperation())
      continue;
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view || !gateOfView(view, r.gateSource, r.hidden) ||
        !llvm::all_of(view->getUsers(),
                      [&](Operation *u) { return u == r.pointwise; }))
      return failure();
  }
  if (r.headwise)
    for (Operation *user : r.product.getUsers())
      if (loop->isAncestor(user) && user != r.matmul &&
          user != fill.getOperation() && user != r.gateSource.getDefiningOp())
        return failure();
  return r;
}

//===----------------------------------------------------------------------===//
// Dependent stages: a product and a group, then another, ...
//===----------------------------------------------------------------------===//

FailureOr<StagedRecurrence> rnn::matchStagedRecurrence(scf::ForOp loop) {
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()) || loop.getNumResults() != 0)
    return failure();
  StagedRecurrence r;
  r.loop = loop;
  SmallVector<linalg::FillOp> fills;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (isHeadwiseContraction(generic))
        return failure();
      bool product = generic->hasAttr(kGemmWeightLayoutAttr);
      // Products and groups alternate, a product first.
      if (product != (r.stages.empty() || r.stages.back().pointwise))
        return failure();
      if (product) {
        StepRecurrence stage;
        stage.loop = loop;
        stage.matmul = generic;
        r.stages.push_back(stage);
      } else {
        r.stages.back().pointwise = generic;
      }
    } else if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      fills.push_back(fill);
    } else if (!isa<memref::SubViewOp>(op) && !isPureScalarOp(&op)) {
      return failure();
    }
  }
  if (r.stages.size() < 2 || !r.stages.back().pointwise)
    return failure();

  // Each product: dense, of the same H and operand type as the others, into
  // a scratch buffer of the loop's own, zeroed by a fill before it or
  // accumulating onto a new window of the step's projection.
  SmallVector<Value> vectorRoots, productRoots;
  for (StepRecurrence &stage : r.stages) {
    if (failed(matchProduct(stage, /*weightCopied=*/true)) ||
        stage.hidden != r.stages.front().hidden ||
        stage.stateElementType() != r.stages.front().stateElementType())
      return failure();
    for (linalg::FillOp fill : fills)
      if (fill.getOutputs()[0] == stage.product) {
        if (stage.fill || !fill->isBeforeInBlock(stage.matmul) ||
            !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
            !loop.isDefinedOutsideOfLoop(stage.product))
          return failure();
        stage.fill = fill;
      }
    stage.accumulates = !stage.fill;
    Value productRoot = underlyingBuffer(stage.product);
    if (!isLoopScratch(productRoot, loop) ||
        (stage.accumulates && (loop.isDefinedOutsideOfLoop(stage.product) ||
                               !dependsOnStep(stage.product, loop))) ||
        llvm::is_contained(productRoots, productRoot) ||
        llvm::is_contained(vectorRoots, underlyingBuffer(stage.state)))
      return failure();
    productRoots.push_back(productRoot);
    vectorRoots.push_back(underlyingBuffer(stage.state));
  }
  // Every fill zeroes a product.
  if (llvm::any_of(fills, [&](linalg::FillOp fill) {
        return llvm::none_of(r.stages, [&](const StepRecurrence &stage) {
          return stage.fill == fill;
        });
      }))
    return failure();
  r.hidden = r.stages.front().hidden;
  for (const StepRecurrence &stage : r.stages)
    r.gates += stage.gates;
  // The vectors of the later stages live only in the step (the kernel
  // keeps them in its staged buffer, not in theirs).
  for (const StepRecurrence &stage : llvm::drop_begin(r.stages))
    if (!isLoopScratch(stage.state, loop))
      return failure();

  // Each group: elementwise over [B, H]; it reads its product's gate
  // windows, its own stage's vector and the stage before's at the element
  // and no other stage's, and writes the next stage's vector (the first
  // stage's, the carried state, for the last group) once.
  SmallVector<Value> writtenRoots;
  for (StepRecurrence &stage : r.stages)
    for (Value init : stage.pointwise.getDpsInits())
      writtenRoots.push_back(underlyingBuffer(init));
  const size_t count = r.stages.size();
  for (size_t index = 0; index < count; ++index) {
    StepRecurrence &stage = r.stages[index];
    linalg::GenericOp pw = stage.pointwise;
    Value next = r.stages[(index + 1) % count].state;
    if (!isGroupOverUnits(pw, r.hidden) || !hasClonableBody(pw, loop))
      return failure();
    unsigned nextWrites = 0;
    for (OpOperand &operand : pw->getOpOperands()) {
      Value value = operand.get();
      AffineMap map = pw.getMatchingIndexingMap(&operand);
      bool isInput = pw.isDpsInput(&operand);
      FailureOr<bool> gate = matchGateOperand(stage, operand);
      if (failed(gate))
        return failure();
      if (*gate)
        continue;
      if (!isIdentity2D(map) && (!isInput || !isColumnBroadcast(map)))
        return failure();
      // Its own vector, and the stage before's (which the kernel still
      // holds: only this group's own stores overwrite it, after its loads).
      if (isInput && (value == stage.state ||
                      (index > 0 && value == r.stages[index - 1].state)))
        continue;
      // The next vector, written but not read: the kernel keeps only the
      // staged copy, which the group's read of its output would miss.
      if (value == next && !isInput) {
        if (!pw.getMatchingBlockArgument(&operand).use_empty())
          return failure();
        ++nextWrites;
        continue;
      }
      Value root = underlyingBuffer(value);
      if (llvm::is_contained(vectorRoots, root) ||
          llvm::is_contained(productRoots, root) ||
          !rebuildableInKernel(value, loop, {}))
        return failure();
    }
    if (nextWrites != 1)
      return failure();
  }
  // Every buffer a group writes, read and written by all of them at the
  // element (the vectors aside: the kernel stages them).
  SmallVector<linalg::GenericOp> groups;
  for (const StepRecurrence &stage : r.stages)
    groups.push_back(stage.pointwise);
  SmallVector<Value> sharedRoots;
  for (Value root : writtenRoots)
    if (!llvm::is_contained(vectorRoots, root))
      sharedRoots.push_back(root);
  if (!accessesElementwise(groups, sharedRoots, Value()))
    return failure();
  // Nothing else in the loop touches a vector or a product: a vector only
  // through its product and the groups above, a product through its fill,
  // its product and the gate views its group alone reads.
  for (size_t index = 0; index < count; ++index) {
    StepRecurrence &stage = r.stages[index];
    Operation *writer = r.stages[(index + count - 1) % count].pointwise;
    Operation *nextReader = index + 1 < count
                                ? r.stages[index + 1].pointwise.getOperation()
                                : nullptr;
    for (Operation *user : stage.state.getUsers())
      if (loop->isAncestor(user) && user != stage.matmul &&
          user != stage.pointwise && user != writer && user != nextReader)
        return failure();
    for (Operation *user : stage.product.getUsers()) {
      if (!loop->isAncestor(user) || user == stage.matmul ||
          user == stage.fill || user == stage.pointwise ||
          isa<memref::DimOp>(user))
        continue;
      auto view = dyn_cast<memref::SubViewOp>(user);
      if (!view || !gateOfView(view, stage.product, r.hidden) ||
          !llvm::all_of(view->getUsers(), [&](Operation *u) {
            return u == stage.pointwise.getOperation();
          }))
        return failure();
    }
  }
  return r;
}

//===----------------------------------------------------------------------===//
// The adjoint order: the group, then the transposed product
//===----------------------------------------------------------------------===//

Type AdjointRecurrence::gradientElementType() const {
  return cast<MemRefType>(gradients.getType()).getElementType();
}

Type AdjointRecurrence::weightElementType() const {
  return cast<MemRefType>(weight.getType()).getElementType();
}

/// Whether `matmul` is the generic of a transposed rnn.headwise_matmul:
/// out[b, h, k] += d[b, g, h, j] * w[h, g, j, k].
static bool isTransposedHeadwiseContraction(linalg::GenericOp matmul) {
  MLIRContext *ctx = matmul.getContext();
  AffineExpr b, h, k, g, j;
  bindDims(ctx, b, h, k, g, j);
  using Exprs = ArrayRef<AffineExpr>;
  SmallVector<AffineMap> maps = AffineMap::inferFromExprList(
      ArrayRef<Exprs>{Exprs{b, g, h, j}, Exprs{h, g, j, k}, Exprs{b, h, k}},
      ctx);
  using utils::IteratorType;
  SmallVector<IteratorType> iterators(3, IteratorType::parallel);
  iterators.append(2, IteratorType::reduction);
  return matmul.getNumDpsInputs() == 2 && matmul.getNumDpsInits() == 1 &&
         matmul.getIndexingMapsArray() == maps &&
         matmul.getIteratorTypesArray() == iterators &&
         isProductBody(matmul.getRegion().front());
}

/// The source of `value` if it is a memref.expand_shape of a rank-2 memref
/// splitting only its last dimension (into `parts` dimensions).
static Value expandedColumns(Value value, unsigned parts) {
  auto expand = value.getDefiningOp<memref::ExpandShapeOp>();
  if (!expand || expand.getSrcType().getRank() != 2)
    return nullptr;
  SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
  if (groups.size() != 2 || groups[0].size() != 1 || groups[1].size() != parts)
    return nullptr;
  return expand.getSrc();
}

FailureOr<AdjointRecurrence> rnn::matchAdjointRecurrence(scf::ForOp loop) {
  AdjointRecurrence r;
  r.loop = loop;
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()) || loop.getNumResults() != 0)
    return failure();
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!r.pointwise) {
        if (generic->hasAttr(kGemmWeightLayoutAttr) ||
            generic->hasAttr(kHeadwiseGemmAttr))
          return failure();
        r.pointwise = generic;
      } else if (!r.matmul) {
        r.matmul = generic;
      } else {
        return failure();
      }
    } else if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      if (!r.pointwise || r.fill || r.matmul)
        return failure();
      r.fill = fill;
    } else if (!isa<memref::SubViewOp, memref::ExpandShapeOp,
                    memref::CollapseShapeOp>(op) &&
               !isPureScalarOp(&op)) {
      return failure();
    }
  }
  if (!r.pointwise || !r.matmul)
    return failure();
  // Without a zero fill, the product accumulates onto what the group wrote
  // into S (checked with the group below).
  r.accumulates = !r.fill;

  // The product: S = P x U, over a zero fill of S.
  linalg::GenericOp matmul = r.matmul;
  Value lhs = matmul.getDpsInputs()[0], rhs = matmul.getDpsInputs()[1];
  Value out = matmul.getDpsInits()[0];
  if (auto layout = matmul->getAttrOfType<IntegerAttr>(kGemmWeightLayoutAttr);
      layout && layout.getInt() == 1 &&
      isTwoDimContraction(matmul, /*weightInOut=*/true)) {
    r.gradients = lhs, r.weight = rhs, r.state = out;
  } else if (auto form = matmul->getAttrOfType<IntegerAttr>(kHeadwiseGemmAttr);
             form && form.getInt() == kHeadwiseTransposed &&
             isTransposedHeadwiseContraction(matmul)) {
    r.headwise = true;
    r.gradients = expandedColumns(lhs, 3);
    r.weight = expandedFromOutside(rhs, loop, 3, 1);
    r.state = expandedFromOutside(out, loop, 2, 1);
  } else {
    return failure();
  }
  if (!r.gradients || !r.weight || !r.state)
    return failure();
  // (Between the group and the product only views and index arithmetic:
  // the walk above admits nothing else.)
  if (r.fill && (r.fill.getOutputs()[0] != out ||
                 !matchPattern(r.fill.getInputs()[0], m_AnyZeroFloat()) ||
                 r.fill->getNextNode() != matmul.getOperation()))
    return failure();
  auto stateType = dyn_cast<MemRefType>(r.state.getType());
  auto weightType = dyn_cast<MemRefType>(r.weight.getType());
  auto gradientType = dyn_cast<MemRefType>(r.gradients.getType());
  if (!stateType || !weightType || !gradientType || stateType.getRank() != 2 ||
      gradientType.getRank() != 2 || !stateType.getElementType().isF32() ||
      !stateType.getLayout().isIdentity() || stateType.isDynamicDim(1) ||
      !weightType.getLayout().isIdentity() || !weightType.hasStaticShape() ||
      gradientType.isDynamicDim(1) || !loop.isDefinedOutsideOfLoop(r.state) ||
      !loop.isDefinedOutsideOfLoop(r.weight) ||
      gradientType.getElementType() != weightType.getElementType() ||
      !isa<Float32Type, BFloat16Type, Float16Type>(
          gradientType.getElementType()))
    return failure();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(gradientType.getStridesAndOffset(strides, offset)) ||
      strides[1] != 1)
    return failure();
  r.hidden = stateType.getDimSize(1);
  if (!r.headwise) {
    if (weightType.getRank() != 2 || weightType.getDimSize(1) != r.hidden ||
        weightType.getDimSize(0) % r.hidden != 0)
      return failure();
    r.gates = weightType.getDimSize(0) / r.hidden;
    r.headSize = r.hidden;
  } else {
    if (weightType.getRank() != 3)
      return failure();
    r.heads = weightType.getDimSize(0);
    r.headSize = weightType.getDimSize(2);
    if (weightType.getDimSize(1) % r.headSize != 0 ||
        r.heads * r.headSize != r.hidden)
      return failure();
    r.gates = weightType.getDimSize(1) / r.headSize;
  }
  if (gradientType.getDimSize(1) != r.gates * r.hidden)
    return failure();

  // The group: elementwise over [B, H]; reads S, writes each gate window of
  // P once, never reads P; writes S only where the product accumulates onto
  // it (once, at the element it reads).
  linalg::GenericOp pw = r.pointwise;
  if (pw.getNumLoops() != 2 || pw.getNumParallelLoops() != 2 ||
      pw.getStaticLoopRanges()[1] != r.hidden)
    return failure();
  Value stateRoot = underlyingBuffer(r.state);
  Value gradientRoot = underlyingBuffer(r.gradients);
  SmallVector<bool> written(r.gates, false);
  for (OpOperand &operand : pw->getOpOperands()) {
    Value value = operand.get();
    AffineMap map = pw.getMatchingIndexingMap(&operand);
    bool isInput = pw.isDpsInput(&operand);
    std::optional<int64_t> gate =
        isInput ? std::nullopt : gateOfView(value, r.gradients, r.hidden);
    if (!isInput)
      r.gateOfInit.push_back(gate);
    if (gate) {
      if (!isIdentity2D(map) || *gate >= r.gates || written[*gate] ||
          !rebuildableInKernel(value, loop, {}))
        return failure();
      written[*gate] = true;
      continue;
    }
    if (value == r.state) {
      if (!isIdentity2D(map) || (!isInput && (!r.accumulates || r.stateInit)))
        return failure();
      if (!isInput)
        r.stateInit = r.gateOfInit.size() - 1;
      continue;
    }
    if (!isIdentity2D(map) && (!isInput || !isColumnBroadcast(map)))
      return failure();
    Value root = underlyingBuffer(value);
    if (root == stateRoot || root == gradientRoot ||
        !rebuildableInKernel(value, loop, {r.state}))
      return failure();
  }
  if (!llvm::all_of(written, [](bool w) { return w; }) ||
      (r.accumulates && !r.stateInit) ||
      !readsWrittenBuffersElementwise(pw, Value()) ||
      !hasClonableBody(pw, loop))
    return failure();
  // Nothing else in the loop touches S or P.
  for (Operation *user : r.state.getUsers()) {
    if (!loop->isAncestor(user) || user == pw.getOperation() ||
        user == matmul.getOperation() ||
        (r.fill && user == r.fill.getOperation()))
      continue;
    if (r.headwise && isa<memref::ExpandShapeOp>(user) &&
        user->getResult(0) == out)
      continue;
    return failure();
  }
  for (Operation *user : r.gradients.getUsers()) {
    // The group writes a one-gate P whole (it never reads P: checked above).
    if (!loop->isAncestor(user) || user == matmul.getOperation() ||
        user == pw.getOperation() || isa<memref::DimOp>(user))
      continue;
    if (r.headwise && isa<memref::ExpandShapeOp>(user) &&
        user->getResult(0) == lhs)
      continue;
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view || !gateOfView(view, r.gradients, r.hidden) ||
        !llvm::all_of(view->getUsers(),
                      [&](Operation *u) { return u == pw.getOperation(); }))
      return failure();
  }
  return r;
}

/// The ops of `loop`'s body that `roots` are computed from, transitively.
static llvm::SetVector<Operation *> bodyOpsBehind(scf::ForOp loop,
                                                  SmallVector<Value> roots) {
  llvm::SetVector<Operation *> needed;
  while (!roots.empty()) {
    Operation *def = roots.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != loop.getBody() || !needed.insert(def))
      continue;
    llvm::append_range(roots, def->getOperands());
  }
  return needed;
}

llvm::SetVector<Operation *> rnn::opsNeededByGroup(const AdjointRecurrence &r) {
  return bodyOpsBehind(r.loop, SmallVector<Value>(r.pointwise->getOperands()));
}

llvm::SetVector<Operation *> rnn::opsNeededByGroup(const StepRecurrence &r) {
  SmallVector<Value> roots;
  for (OpOperand &operand : r.pointwise->getOpOperands())
    if (!r.gateOfOperand[operand.getOperandNumber()] || r.accumulates)
      roots.push_back(operand.get());
  return bodyOpsBehind(r.loop, roots);
}

Value rnn::buildBatchGuard(OpBuilder &b, scf::ForOp loop, Value state,
                           int64_t maxBatch, int64_t batchMultiple,
                           Value &batch) {
  Location loc = loop.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto cmp = [&](arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, loc, predicate, lhs, rhs);
  };
  batch = memref::DimOp::create(b, loc, state, 0);
  Value fits = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::ugt, batch, index(0)),
      cmp(arith::CmpIPredicate::ule, batch, index(maxBatch)));
  if (batchMultiple > 1)
    fits = arith::AndIOp::create(
        b, loc, fits,
        cmp(arith::CmpIPredicate::eq,
            arith::RemUIOp::create(b, loc, batch, index(batchMultiple)),
            index(0)));
  return arith::AndIOp::create(
      b, loc, fits,
      cmp(arith::CmpIPredicate::sgt, loop.getUpperBound(), index(0)));
}
