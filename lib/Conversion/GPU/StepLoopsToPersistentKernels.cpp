//===- StepLoopsToPersistentKernels.cpp - A recurrence as one kernel ------===//
//
// The per-step path runs each step as a GEMM plus the cell's fused kernel,
// and every step's GEMM streams all of U from L2 (24 MiB for the bf16 GRU
// at H = 2048). One kernel for the whole sequence keeps U on chip instead:
// each block owns 16 hidden units of every gate and holds their rows of U
// in registers, and the blocks meet at a grid-wide barrier once a step
// (docs/persistent-recurrences.md: 5.96 against 9.69 us a step for that
// GRU on the H100). The data movement and the product are written once, in
// the device library (lib/DeviceLibrary); this pass recognises the step
// loops that fit it and emits the kernel around the cell's own pointwise
// step, keeping the loop as the fallback.
//
//===----------------------------------------------------------------------===//

#include "StepRecurrence.h"
#include "rnn/Conversion/Passes.h"

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace rnn {
#define GEN_PASS_DEF_CONVERTSTEPLOOPSTOPERSISTENTKERNELS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;
using rnn::StepRecurrence;
namespace persistent = rnn::persistent;

namespace {

constexpr llvm::StringLiteral kRequireResident =
    "rnn_cuda_require_resident_next_launch";
constexpr llvm::StringLiteral kTakeRefused = "rnn_cuda_take_refused_launch";
constexpr llvm::StringLiteral kPrefetch = "rnn_persistent_prefetch_l1";

} // namespace

bool rnn::runsOnDeviceLibrary(const StepRecurrence &r) {
  return !r.headwise && r.stateElementType().isBF16() &&
         persistent::hasEntryPoints(r.gates, r.hidden);
}

/// Declares `name` (private) in `module` unless it exists.
static void declareFunction(ModuleOp module, StringRef name,
                            FunctionType type) {
  if (module.lookupSymbol(name))
    return;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  func::FuncOp::create(b, module.getLoc(), name, type).setPrivate();
}

namespace {

class KernelBuilder {
public:
  KernelBuilder(const StepRecurrence &r, OpBuilder &b, Location loc)
      : r(r), b(b), loc(loc) {}

  /// Fills the body of `launch`: the library's set-up, then per step its
  /// product, the cell's pointwise step for this block's units, and the
  /// release.
  void build(gpu::LaunchOp launch, Value steps, Value batch, Value hBuffer,
             Value counter) {
    MLIRContext *ctx = b.getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i32 = b.getI32Type();
    Value thread = launch.getThreadIds().x;
    Value block = launch.getBlockIds().x;
    // The lane's weight fragments: an array the library fills and reads,
    // which LLVM keeps in registers once the calls are inlined.
    Value fragments = LLVM::AllocaOp::create(
        b, loc, ptrType, i32,
        arith::ConstantIntOp::create(b, loc, r.hidden / 16, 64));
    call("begin", {pointerTo(r.weight), fragments});
    Value hBase = pointerTo(hBuffer), counterPtr = pointerTo(counter);
    Value batch32 = toI32(batch);
    Value c0 = constant(0), c1 = constant(1), c2 = constant(2);
    auto stepLoop = scf::ForOp::create(b, loc, c0, steps, c1);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(stepLoop.getBody());
    Value step = stepLoop.getInductionVar();
    Value parity = arith::RemUIOp::create(b, loc, step, c2);
    Value nextParity = arith::SubIOp::create(b, loc, c1, parity);
    Value previous = LLVM::GEPOp::create(
        b, loc, ptrType, b.getBF16Type(), hBase,
        ValueRange{arith::IndexCastOp::create(
            b, loc, b.getI64Type(),
            arith::MulIOp::create(b, loc, parity,
                                  constant(maxBatch() * r.hidden)))});
    // The views the group reads and writes, rebuilt for this step.
    IRMapping views;
    scf::ForOp loop = r.loop;
    views.map(loop.getInductionVar(), step);
    llvm::SetVector<Operation *> needed = rnn::opsNeededByGroup(r);
    for (Operation &op : loop.getBody()->without_terminator())
      if ((isa<memref::SubViewOp>(op) || rnn::isPureScalarOp(&op)) &&
          needed.contains(&op))
        b.clone(op, views);

    // Thread t takes (row, unit) = divmod(p, units) for p = t, t + threads,
    // ...
    const int64_t kUnits = persistent::layoutFor(r.hidden).unitsPerBlock;
    Value elements = arith::MulIOp::create(b, loc, batch, constant(kUnits));
    Value blockColumn = arith::MulIOp::create(b, loc, block, constant(kUnits));
    auto element = [&](Value p) {
      Value unit = arith::RemUIOp::create(b, loc, p, constant(kUnits));
      return std::make_tuple(
          unit, Value(arith::DivUIOp::create(b, loc, p, constant(kUnits))),
          Value(arith::AddIOp::create(b, loc, blockColumn, unit)));
    };
    linalg::GenericOp pw = r.pointwise;

    // The step's rows of what it reads besides the product (its
    // projection) do not depend on it: into L1 while the blocks wait for
    // each other and multiply (the LSTM's pointwise phase took 3.4 us a
    // step without, 2.3 with, in the standalone program of
    // docs/performance-notes.md).
    auto prefetchLoop =
        scf::ForOp::create(b, loc, thread, elements, constant(threads()));
    {
      OpBuilder::InsertionGuard inLoop(b);
      b.setInsertionPointToStart(prefetchLoop.getBody());
      auto [unit, row, column] = element(prefetchLoop.getInductionVar());
      for (OpOperand &operand : pw->getOpOperands()) {
        bool gate = r.gateOfOperand[operand.getOperandNumber()].has_value();
        if (!pw.isDpsInput(&operand) || operand.get() == r.state ||
            (gate && !r.accumulates) ||
            pw.getBody()->getArgument(operand.getOperandNumber()).use_empty())
          continue;
        // Only what changes with the step: the addresses of what does not
        // would be hoisted out of the time loop and held in registers, and
        // the product needs them all (spills made the LSTM's step slower).
        if (!rnn::dependsOnStep(operand.get(), r.loop))
          continue;
        Value view = views.lookupOrDefault(operand.get());
        call("prefetch",
             {addressOf(view, indices(pw.getMatchingIndexingMap(&operand), row,
                                      column))});
      }
    }
    call("product", {toI32(step), batch32, previous, counterPtr, fragments});

    auto elementLoop =
        scf::ForOp::create(b, loc, thread, elements, constant(threads()));
    b.setInsertionPointToStart(elementLoop.getBody());
    auto [unit, row, column] = element(elementLoop.getInductionVar());

    Block *body = pw.getBody();
    IRMapping scalars;
    for (OpOperand &operand : pw->getOpOperands()) {
      BlockArgument arg = body->getArgument(operand.getOperandNumber());
      if (arg.use_empty())
        continue;
      Value value;
      if (std::optional<int64_t> gate =
              r.gateOfOperand[operand.getOperandNumber()]) {
        value = call("sum", {toI32(constant(*gate)), toI32(row), toI32(unit)})
                    .getResult(0);
        if (r.accumulates)
          value = arith::AddFOp::create(
              b, loc,
              memref::LoadOp::create(b, loc, views.lookup(operand.get()),
                                     ValueRange{row, column}),
              value);
      } else if (operand.get() == r.state) {
        value = memref::LoadOp::create(b, loc, hBuffer,
                                       ValueRange{parity, row, column});
      } else {
        value = memref::LoadOp::create(
            b, loc, views.lookupOrDefault(operand.get()),
            indices(pw.getMatchingIndexingMap(&operand), row, column));
      }
      scalars.map(arg, value);
    }
    for (Operation &op : body->without_terminator())
      b.clone(op, scalars);
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    for (auto [index, init] : llvm::enumerate(pw.getDpsInitsMutable())) {
      Value result = scalars.lookupOrDefault(yield.getOperand(index));
      if (init.get() == r.state)
        memref::StoreOp::create(b, loc, result, hBuffer,
                                ValueRange{nextParity, row, column});
      else
        memref::StoreOp::create(
            b, loc, result, views.lookupOrDefault(init.get()),
            indices(pw.getMatchingIndexingMap(&init), row, column));
    }
    b.setInsertionPointAfter(elementLoop);
    call("release", {counterPtr});
  }

private:
  int64_t maxBatch() const { return persistent::layoutFor(r.hidden).maxBatch; }
  int64_t threads() const {
    return persistent::threadsPerBlock(r.gates, r.hidden);
  }
  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  }
  Value pointerTo(Value memref) {
    Value address = arith::IndexCastOp::create(
        b, loc, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref));
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  }
  /// The address of `view`[`at`], as a pointer.
  Value addressOf(Value view, ArrayRef<Value> at) {
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, view);
    Value linear = metadata.getOffset();
    for (auto [index, stride] : llvm::zip(at, metadata.getStrides()))
      linear = arith::AddIOp::create(
          b, loc, linear, arith::MulIOp::create(b, loc, index, stride));
    unsigned bytes =
        cast<MemRefType>(view.getType()).getElementTypeBitWidth() / 8;
    Value address = arith::AddIOp::create(
        b, loc, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, view),
        arith::MulIOp::create(b, loc, linear, constant(bytes)));
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()),
        Value(arith::IndexCastOp::create(b, loc, b.getI64Type(), address)));
  }
  SmallVector<Value> indices(AffineMap map, Value row, Value column) {
    if (rnn::isIdentity2D(map))
      return {row, column};
    return {column};
  }
  func::CallOp call(StringRef entry, ValueRange args) {
    std::string name = entry == "prefetch"
                           ? std::string(kPrefetch)
                           : ("rnn_persistent_g" + Twine(r.gates) + "_h" +
                              Twine(r.hidden) + "_" + entry)
                                 .str();
    Type result = entry == "sum" ? b.getF32Type() : Type();
    return func::CallOp::create(b, loc, name,
                                result ? TypeRange{result} : TypeRange{}, args);
  }

  const StepRecurrence &r;
  OpBuilder &b;
  Location loc;
};

} // namespace

/// Declares the library entry points for (gates, hidden) in `module`.
static void declareEntryPoints(ModuleOp module, int64_t gates, int64_t hidden) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  std::string prefix =
      ("rnn_persistent_g" + Twine(gates) + "_h" + Twine(hidden) + "_").str();
  declareFunction(module, prefix + "begin",
                  FunctionType::get(ctx, {ptr, ptr}, {}));
  declareFunction(module, prefix + "product",
                  FunctionType::get(ctx, {i32, i32, ptr, ptr, ptr}, {}));
  declareFunction(module, prefix + "sum",
                  FunctionType::get(ctx, {i32, i32, i32}, {f32}));
  declareFunction(module, prefix + "release",
                  FunctionType::get(ctx, {ptr}, {}));
  declareFunction(module, kPrefetch, FunctionType::get(ctx, {ptr}, {}));
}

static void rewrite(const StepRecurrence &r, ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  // Before this adds uses of S of its own.
  bool copyBack = !rnn::isLoopScratch(r.state, r.loop);
  declareEntryPoints(module, r.gates, r.hidden);
  declareFunction(module, kRequireResident, FunctionType::get(ctx, {}, {}));
  declareFunction(module, kTakeRefused,
                  FunctionType::get(ctx, {}, {IntegerType::get(ctx, 32)}));

  scf::ForOp loop = r.loop;
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto cmp = [&](arith::CmpIPredicate predicate, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, loc, predicate, lhs, rhs);
  };
  Value steps = loop.getUpperBound();
  // The library's shapes: a batch of whole 8-row tiles, up to the layout's.
  Value batch;
  Value fits = rnn::buildBatchGuard(b, r.loop, r.state,
                                    persistent::layoutFor(r.hidden).maxBatch,
                                    persistent::kBatchTile, batch);

  // h_{t-1} and h_t alternate between the two halves of a scratch buffer
  // (rows for the largest batch): every block reads all of h_{t-1} while
  // the others write h_t.
  auto hType = MemRefType::get(
      {2, persistent::layoutFor(r.hidden).maxBatch, r.hidden}, b.getBF16Type());
  Value hBuffer = memref::AllocOp::create(b, loc, hType);
  Value counter =
      memref::AllocOp::create(b, loc, MemRefType::get({1}, b.getI32Type()));
  // Half `which` of the buffer as [B, H] (row stride H).
  auto half = [&](Value which) {
    SmallVector<OpFoldResult> offsets = {which, b.getIndexAttr(0),
                                         b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), batch,
                                       b.getIndexAttr(r.hidden)};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    auto type = memref::SubViewOp::inferRankReducedResultType(
        {ShapedType::kDynamic, r.hidden}, hType, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(type), hBuffer,
                                     offsets, sizes, strides);
  };

  auto attempt = scf::IfOp::create(b, loc, TypeRange{b.getI1Type()}, fits,
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&attempt.getThenRegion().front());
    linalg::FillOp::create(
        b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 32)},
        ValueRange{counter});
    memref::CopyOp::create(b, loc, r.state, half(index(0)));
    func::CallOp::create(b, loc, kRequireResident, TypeRange{}, ValueRange{});
    Value one = index(1);
    auto launch = gpu::LaunchOp::create(
        b, loc, index(persistent::blocks(r.hidden)), one, one,
        index(persistent::threadsPerBlock(r.gates, r.hidden)), one, one,
        arith::ConstantIntOp::create(
            b, loc, persistent::sharedBytes(r.gates, r.hidden), 32),
        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
        /*workgroupAttributions=*/{}, /*privateAttributions=*/{},
        index(persistent::kClusterSize), one, one);
    // The builder leaves out the block arguments of the cluster ids and
    // sizes that the op's verifier expects after the other twelve.
    Block &kernelBody = launch.getBody().front();
    while (kernelBody.getNumArguments() < launch.getNumConfigRegionAttributes())
      kernelBody.addArgument(b.getIndexType(), loc);
    {
      OpBuilder::InsertionGuard inKernel(b);
      b.setInsertionPointToStart(&kernelBody);
      KernelBuilder(r, b, loc).build(launch, steps, batch, hBuffer, counter);
      gpu::TerminatorOp::create(b, loc);
    }
    Value refused =
        func::CallOp::create(b, loc, kTakeRefused, TypeRange{b.getI32Type()},
                             ValueRange{})
            .getResult(0);
    Value ran = cmp(arith::CmpIPredicate::eq, refused,
                    arith::ConstantIntOp::create(b, loc, 0, 32));
    if (copyBack) {
      auto copyBack = scf::IfOp::create(b, loc, ran, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard inCopy(b);
      b.setInsertionPointToStart(&copyBack.getThenRegion().front());
      memref::CopyOp::create(
          b, loc, half(arith::RemUIOp::create(b, loc, steps, index(2))),
          r.state);
    }
    scf::YieldOp::create(b, loc, ran);
    b.setInsertionPointToStart(&attempt.getElseRegion().front());
    scf::YieldOp::create(
        b, loc,
        ValueRange{arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0)});
  }
  // The per-step loop runs when the kernel did not.
  Value notRan = arith::XOrIOp::create(
      b, loc, attempt.getResult(0),
      arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  auto fallback = scf::IfOp::create(b, loc, notRan, /*withElseRegion=*/false);
  loop->moveBefore(fallback.getThenRegion().front().getTerminator());
  b.setInsertionPointAfter(fallback);
  memref::DeallocOp::create(b, loc, hBuffer);
  memref::DeallocOp::create(b, loc, counter);
}

namespace {

struct ConvertStepLoopsToPersistentKernelsPass
    : rnn::impl::ConvertStepLoopsToPersistentKernelsBase<
          ConvertStepLoopsToPersistentKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StepRecurrence> found;
    module.walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::LaunchOp>())
        return;
      if (FailureOr<StepRecurrence> r = rnn::matchStepRecurrence(loop);
          succeeded(r) && rnn::runsOnDeviceLibrary(*r))
        found.push_back(*r);
    });
    for (const StepRecurrence &r : found)
      rewrite(r, module);
  }
};

} // namespace
