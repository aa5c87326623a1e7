//===- StepLoopsToPersistentKernels.cpp - A recurrence as one kernel ------===//
//
// The per-step path runs each step as a GEMM plus the cell's fused kernel,
// and every step's GEMM streams all of U from L2 (24 MiB for the bf16 GRU
// at H = 2048). One kernel for the whole sequence keeps U on chip instead:
// each block owns 16 hidden units of every gate and holds their rows of U
// in registers, and the blocks meet at a grid-wide barrier once a step (a
// barrier per batch tile: each tile of the batch runs on its own copy of
// the blocks)
// (docs/persistent-recurrences.md: 5.96 against 9.69 us a step for that
// GRU on the H100). A derived backward's step (the adjoint group, then the
// transposed product dh = dgates x U) runs the same way, each block owning
// 16 units of dh and their columns of U. The data movement and the product
// are written once, in the device library (lib/DeviceLibrary); this pass
// recognises the step loops that fit it and emits the kernel around the
// cell's own pointwise step, keeping the loop as the fallback.
//
//===----------------------------------------------------------------------===//

#include "StepRecurrence.h"
#include "rnn/Conversion/Passes.h"

#include "rnn/DeviceLibrary/PersistentRecurrence.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
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
constexpr llvm::StringLiteral kBatchTiles = "rnn_cuda_persistent_batch_tiles";
constexpr llvm::StringLiteral kLowLatency = "rnn_cuda_persistent_low_latency";
constexpr llvm::StringLiteral kPrefetch = "rnn_persistent_prefetch_l1";
constexpr llvm::StringLiteral kTanh = "rnn_persistent_tanh";

} // namespace

/// What the library multiplies for a product of `element` operands (state
/// and weight alike) whose generic is `product`: bf16, f16, or f32 where the
/// product allows TF32 (an f32 product that does not keeps the step loop:
/// the library has no full-precision f32 product).
static std::optional<persistent::Operands> libraryOperands(Type element,
                                                           Operation *product) {
  if (element.isBF16())
    return persistent::Operands::BF16;
  if (element.isF16())
    return persistent::Operands::F16;
  if (element.isF32() && product->hasAttr(rnn::kGemmAllowTf32Attr))
    return persistent::Operands::TF32;
  return std::nullopt;
}

std::optional<persistent::Operands>
rnn::deviceLibraryOperands(const StepRecurrence &r) {
  if (r.headwise || r.weightElementType() != r.stateElementType())
    return std::nullopt;
  return libraryOperands(r.stateElementType(), r.matmul);
}

std::optional<persistent::Operands>
rnn::deviceLibraryOperands(const AdjointRecurrence &r) {
  if (r.headwise || r.weightElementType() != r.gradientElementType())
    return std::nullopt;
  return libraryOperands(r.gradientElementType(), r.matmul);
}

bool rnn::runsOnDeviceLibrary(const StepRecurrence &r) {
  std::optional<persistent::Operands> operands = deviceLibraryOperands(r);
  return operands && persistent::hasEntryPoints(persistent::Direction::Forward,
                                                *operands, r.gates, r.hidden);
}

bool rnn::runsOnDeviceLibrary(const StagedRecurrence &r) {
  std::optional<persistent::Operands> operands =
      deviceLibraryOperands(r.stages.front());
  if (!operands || llvm::any_of(r.stages, [&](const StepRecurrence &stage) {
        return deviceLibraryOperands(stage) != operands;
      }))
    return false;
  if (!persistent::hasEntryPoints(persistent::Direction::Forward, *operands,
                                  r.gates, r.hidden))
    return false;
  persistent::Layout layout = persistent::layoutFor(
      persistent::Direction::Forward, *operands, static_cast<int>(r.gates),
      static_cast<int>(persistent::paddedHidden(r.hidden)));
  return layout.registerTiles == layout.rowTiles;
}

bool rnn::runsOnDeviceLibrary(const AdjointRecurrence &r) {
  std::optional<persistent::Operands> operands = deviceLibraryOperands(r);
  return operands && persistent::hasEntryPoints(persistent::Direction::Backward,
                                                *operands, r.gates, r.hidden);
}

int64_t rnn::clusterLimit(const StepRecurrence &r, int64_t maxClusterSize,
                          bool gridKernels) {
  return gridKernels && runsOnDeviceLibrary(r) ? 1 : maxClusterSize;
}

int64_t rnn::clusterLimit(const AdjointRecurrence &r, int64_t maxClusterSize,
                          bool gridKernels) {
  return gridKernels && runsOnDeviceLibrary(r) ? 1 : maxClusterSize;
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

/// What both kernels' builders share: the library's entry points for one
/// (direction, gates, H), the step's views rebuilt in the kernel, addresses
/// and constants.
class GridKernelBuilderBase {
protected:
  GridKernelBuilderBase(persistent::Direction direction,
                        persistent::Operands operands, Type elementType,
                        int64_t gates, int64_t hidden, scf::ForOp loop,
                        linalg::GenericOp pointwise, OpBuilder &b, Location loc)
      : direction(direction), operands(operands), elementType(elementType),
        gates(gates), hidden(hidden), padded(persistent::paddedHidden(hidden)),
        layout(persistent::layoutFor(direction, operands, gates, padded)),
        loop(loop), pw(pointwise), b(b), loc(loc) {}

  /// The ops of the loop's body that `needed` holds (views and index
  /// arithmetic), cloned for step `step` (clamped by the caller).
  IRMapping viewsFor(Value step, const llvm::SetVector<Operation *> &needed) {
    IRMapping views;
    views.map(loop.getInductionVar(), step);
    for (Operation &op : loop.getBody()->without_terminator())
      if ((isa<memref::SubViewOp, memref::ExpandShapeOp,
               memref::CollapseShapeOp>(op) ||
           rnn::isPureScalarOp(&op)) &&
          needed.contains(&op))
        b.clone(op, views);
    return views;
  }

  /// The lane's weight fragments: an array the library fills and reads,
  /// which LLVM keeps in registers once the calls are inlined.
  Value fragments() {
    MLIRContext *ctx = b.getContext();
    return LLVM::AllocaOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx), b.getI32Type(),
        arith::ConstantIntOp::create(b, loc, layout.fragments, 64));
  }

  /// Where the layout pads H, the rest of the current block runs only for
  /// the recurrence's own columns (an scf.if the builder then inserts into).
  void skipPadding(Value column) {
    if (padded == hidden)
      return;
    Value own = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, column,
                                      constant(hidden));
    auto branch = scf::IfOp::create(b, loc, own, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&branch.getThenRegion().front());
  }

  /// The library's set-up: U's fragments into `weights`.
  void begin(Value weight, Value weights) {
    call("begin", {pointerTo(weight), weights,
                   arith::ConstantIntOp::create(b, loc, hidden, 32)});
  }

  /// The block's batch tile (launch.y of `tiles` tiles of `tileRows` rows;
  /// the last may have fewer): its first row and its rows.
  void setTile(gpu::LaunchOp launch, Value batch, Value tileRows) {
    tile = launch.getBlockIds().y;
    firstRow = arith::MulIOp::create(b, loc, tile, tileRows);
    tileBatch = arith::MinUIOp::create(
        b, loc, tileRows, arith::SubIOp::create(b, loc, batch, firstRow));
  }

  /// A loop over the block's elements p = `thread`, `thread` + threads, ...
  /// of its tile's [rows, units], skipping the padding units, whose body `fn`
  /// builds for (unit, the row in the tile, the row in the batch, column).
  void forEachElement(Value thread, Value block,
                      function_ref<void(Value, Value, Value, Value)> fn) {
    Value elements = arith::MulIOp::create(b, loc, tileBatch,
                                           constant(layout.unitsPerBlock));
    auto loop =
        scf::ForOp::create(b, loc, thread, elements, constant(layout.threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    auto [unit, tileRow, column] = element(loop.getInductionVar(), block);
    skipPadding(column);
    fn(unit, tileRow, arith::AddIOp::create(b, loc, firstRow, tileRow), column);
  }

  /// The tile's step counter: element `tile` of `counter`.
  Value tileCounter(Value counter) {
    return LLVM::GEPOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), b.getI32Type(),
        pointerTo(counter),
        ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), tile)});
  }

  /// The tile's rows of half `parity` of the staged vector's double buffer
  /// ([2, B, the layout's row stride]) at `base`.
  Value stagedRows(Value base, Value batch, Value parity) {
    Value rowElements =
        constant(persistent::stagedRowElements(layout.stagedWidth));
    Value row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, parity, batch), firstRow);
    return offsetElements(base,
                          arith::MulIOp::create(b, loc, row, rowElements));
  }

  /// The tile's rows of half `parity` of the low-latency buffer ([2, B,
  /// words of a row] of i64) at `base`.
  Value exchangeRows(Value base, Value batch, Value parity) {
    Value row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, parity, batch), firstRow);
    Value words = arith::MulIOp::create(
        b, loc, row,
        constant(persistent::lowLatencyRowWords(layout.stagedWidth, operands)));
    return LLVM::GEPOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), b.getI64Type(),
        base,
        ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), words)});
  }
  Value nullPointer() {
    return LLVM::ZeroOp::create(b, loc,
                                LLVM::LLVMPointerType::get(b.getContext()));
  }

  /// The group's body for one element: each block argument it reads bound
  /// to `valueOf` its operand, then `store` of each init and the value the
  /// body yields for it.
  void cloneGroup(function_ref<Value(OpOperand &)> valueOf,
                  function_ref<void(OpOperand &, Value)> store) {
    Block *body = pw.getBody();
    IRMapping scalars;
    for (OpOperand &operand : pw->getOpOperands()) {
      BlockArgument arg = body->getArgument(operand.getOperandNumber());
      if (!arg.use_empty())
        scalars.map(arg, valueOf(operand));
    }
    for (Operation &op : body->without_terminator())
      cloneApproximated(op, scalars);
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    for (auto [index, init] : llvm::enumerate(pw.getDpsInitsMutable()))
      store(init, scalars.lookupOrDefault(yield.getOperand(index)));
  }

  /// Clones `op` of the group into the kernel; where the product reads a
  /// 16-bit state, its f32 math at about that precision: exp and division by
  /// the GPU's approximate instructions (fastmath afn: libdevice's fast exp,
  /// div.approx), tanh by tanh.approx.f32 (the library's rnn_persistent_tanh,
  /// relative error below 2^-10: under bf16's rounding of 2^-8, about f16's
  /// 2^-11; the f16 kernels' results stayed as close to float64 as the step
  /// loop's, 7.0e-4). The f32 states and outputs then differ from the step
  /// loop's (the fallback) by about that much. The step's pointwise chain is
  /// the longest part of a step at small batches, and the IEEE forms made
  /// it about twice as long. A TF32 product reads the f32 state itself,
  /// which keeps the IEEE forms: the cell's f32 math stays as precise as
  /// the step loop's.
  void cloneApproximated(Operation &op, IRMapping &scalars) {
    bool f32 = operands != persistent::Operands::TF32 &&
               op.getNumResults() == 1 && op.getResult(0).getType().isF32();
    if (f32 && isa<math::TanhOp>(op)) {
      Value x = scalars.lookupOrDefault(op.getOperand(0));
      scalars.map(op.getResult(0),
                  func::CallOp::create(b, loc, kTanh, TypeRange{b.getF32Type()},
                                       ValueRange{x})
                      .getResult(0));
      return;
    }
    Operation *clone = b.clone(op, scalars);
    if (f32 && isa<arith::DivFOp, math::ExpOp>(clone)) {
      auto fastMath = cast<arith::ArithFastMathInterface>(clone);
      clone->setAttr(
          fastMath.getFastMathAttrName(),
          arith::FastMathFlagsAttr::get(
              b.getContext(), fastMath.getFastMathFlagsAttr().getValue() |
                                  arith::FastMathFlags::afn));
    }
  }

  /// (unit, row in the tile, column) of element `p` of the block's
  /// [rows of its batch tile, units] elements.
  std::tuple<Value, Value, Value> element(Value p, Value block) {
    const int64_t units = layout.unitsPerBlock;
    Value unit = arith::RemUIOp::create(b, loc, p, constant(units));
    Value row = arith::DivUIOp::create(b, loc, p, constant(units));
    Value column = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block, constant(units)), unit);
    return {unit, row, column};
  }

  /// Prefetches into L1 the element (row, column) of each input of the
  /// group that `prefetched` accepts: the step's rows, the states the group
  /// carries in memory, and, where the layout leaves registers, what is the
  /// same every step (a bias), since every step's wait empties L1.
  void prefetchInputs(const IRMapping &views, Value row, Value column,
                      function_ref<bool(OpOperand &)> prefetched) {
    for (OpOperand &operand : pw->getOpOperands()) {
      if (!pw.isDpsInput(&operand) ||
          pw.getBody()->getArgument(operand.getOperandNumber()).use_empty() ||
          !prefetched(operand))
        continue;
      // What is the same every step costs its address a register for the
      // whole loop: only where the layout leaves room.
      if (!rnn::dependsOnStep(operand.get(), loop) &&
          !llvm::is_contained(pw.getDpsInits(), operand.get()) &&
          persistent::spareRegisters(layout) < persistent::kRoomyRegisters)
        continue;
      Value view = views.lookupOrDefault(operand.get());
      call("prefetch",
           {addressOf(view, indices(pw.getMatchingIndexingMap(&operand), row,
                                    column))});
    }
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
  /// `base` advanced by `elements` values of the product's operand type.
  Value offsetElements(Value base, Value elements) {
    return LLVM::GEPOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), elementType, base,
        ValueRange{
            arith::IndexCastOp::create(b, loc, b.getI64Type(), elements)});
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
    std::string name =
        entry == "prefetch"
            ? std::string(kPrefetch)
            : persistent::entryPointName(direction, operands, gates, padded,
                                         entry.str().c_str());
    Type result = entry == "sum" ? b.getF32Type() : Type();
    return func::CallOp::create(b, loc, name,
                                result ? TypeRange{result} : TypeRange{}, args);
  }

  persistent::Direction direction;
  persistent::Operands operands;
  /// The product's operand type: bf16, f16 or f32.
  Type elementType;
  /// G, the recurrence's H and the layout's (a multiple of 64).
  int64_t gates, hidden, padded;
  persistent::Layout layout;
  scf::ForOp loop;
  linalg::GenericOp pw;
  OpBuilder &b;
  Location loc;
  /// This block's batch tile (setTile): its index, first row and rows.
  Value tile, firstRow, tileBatch;
};

/// The forward's kernel: per step the library's product of h_{t-1}, then
/// the cell's pointwise step for this block's units; for a step of
/// dependent stages (rnn::StagedRecurrence), each stage in turn: its
/// vector's exchange, the product of its gates' tiles, its group.
class KernelBuilder : GridKernelBuilderBase {
public:
  /// `stages`: the step's one product and group, or its dependent stages;
  /// `gates`: all of theirs.
  KernelBuilder(ArrayRef<StepRecurrence> stages, int64_t gates, OpBuilder &b,
                Location loc)
      : GridKernelBuilderBase(persistent::Direction::Forward,
                              *rnn::deviceLibraryOperands(stages.front()),
                              stages.front().stateElementType(), gates,
                              stages.front().hidden, stages.front().loop,
                              stages.front().pointwise, b, loc),
        stages(stages) {}

  /// Fills the body of `launch`: the library's set-up (the fragments of
  /// `weight`, every stage's rows), then per step and stage its product,
  /// the stage's pointwise group for this block's units (each value of the
  /// next stage's vector also published to the library, for the
  /// low-latency exchange of small batch tiles), and the release. A step of
  /// m stages is m exchanges of the staged vector: exchange m·t + s stages
  /// stage s's vector of step t.
  void build(gpu::LaunchOp launch, Value steps, Value batch, Value tileRows,
             Value weight, Value hBuffer, Value counter, Value exchange,
             Value lowLatency) {
    Value thread = launch.getThreadIds().x;
    Value block = launch.getBlockIds().x;
    setTile(launch, batch, tileRows);
    Value weights = fragments();
    begin(weight, weights);
    Value hBase = pointerTo(hBuffer), counterPtr = tileCounter(counter);
    // The tile's rows of half `which` of the low-latency buffer, or null
    // where the tiles do not use it (or the layout has none).
    Value exchangeBase, exchanging;
    if (exchange) {
      exchangeBase = pointerTo(exchange);
      exchanging =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, lowLatency,
                                arith::ConstantIntOp::create(b, loc, 0, 32));
    }
    auto exchangeHalf = [&](Value which) -> Value {
      if (!exchange)
        return nullPointer();
      return arith::SelectOp::create(b, loc, exchanging,
                                     exchangeRows(exchangeBase, batch, which),
                                     nullPointer());
    };
    Value batch32 = toI32(tileBatch);
    Value c0 = constant(0), c1 = constant(1), c2 = constant(2);
    auto stepLoop = scf::ForOp::create(b, loc, c0, steps, c1);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(stepLoop.getBody());
    Value step = stepLoop.getInductionVar();
    const int64_t count = static_cast<int64_t>(stages.size());
    int64_t firstGate = 0;
    for (size_t index = 0; index < stages.size(); ++index) {
      const StepRecurrence &r = stages[index];
      // (The base's helpers clone and read the group of the stage at hand.)
      pw = r.pointwise;
      Value next = stages[(index + 1) % count].state;
      Value phase =
          count == 1 ? step
                     : arith::AddIOp::create(
                           b, loc,
                           arith::MulIOp::create(b, loc, step, constant(count)),
                           constant(static_cast<int64_t>(index)));
      Value parity = arith::RemUIOp::create(b, loc, phase, c2);
      Value nextParity = arith::SubIOp::create(b, loc, c1, parity);
      // The low-latency buffer's halves of this exchange (read by stage)
      // and of the next (written by publish and release), once an exchange.
      Value exchangeIn = exchangeHalf(parity);
      Value exchangeOut = exchangeHalf(nextParity);
      Value previous = stagedRows(hBase, batch, parity);
      // The half of the staged buffer that holds a vector the group reads:
      // its own stage's, or the stage before's (in the other half until
      // this group's own stores); none for anything else.
      auto stagedHalf = [&](Value value) -> Value {
        if (value == r.state)
          return parity;
        if (index > 0 && value == stages[index - 1].state)
          return nextParity;
        return nullptr;
      };
      // The views the group reads and writes, rebuilt for this step.
      IRMapping views = viewsFor(step, rnn::opsNeededByGroup(r));

      // What the group reads besides the product (its projection, c, and
      // the biases where registers allow) does not depend on it: into L1
      // while the vector comes in and the block multiplies. After the
      // wait, whose acquire empties L1.
      Value phase32 = toI32(phase);
      call("stage", {phase32, batch32, previous, counterPtr, exchangeIn});
      forEachElement(thread, block, [&](Value, Value, Value row, Value column) {
        prefetchInputs(views, row, column, [&](OpOperand &operand) {
          bool gate = r.gateOfOperand[operand.getOperandNumber()].has_value();
          return !stagedHalf(operand.get()) && (!gate || r.accumulates);
        });
      });
      int firstTile =
          persistent::tileOfGate(layout, static_cast<int>(firstGate));
      int lastTile = persistent::tileOfGate(
          layout, static_cast<int>(firstGate + r.gates - 1));
      call("multiply", {phase32, batch32, weights,
                        arith::ConstantIntOp::create(b, loc, firstTile, 32),
                        arith::ConstantIntOp::create(
                            b, loc, lastTile - firstTile + 1, 32)});

      forEachElement(
          thread, block,
          [&](Value unit, Value tileRow, Value row, Value column) {
            cloneGroup(
                [&](OpOperand &operand) -> Value {
                  if (std::optional<int64_t> gate =
                          r.gateOfOperand[operand.getOperandNumber()]) {
                    Value sum = call("sum", {toI32(constant(firstGate + *gate)),
                                             toI32(tileRow), toI32(unit)})
                                    .getResult(0);
                    if (!r.accumulates)
                      return sum;
                    return arith::AddFOp::create(
                        b, loc,
                        memref::LoadOp::create(b, loc,
                                               views.lookup(operand.get()),
                                               ValueRange{row, column}),
                        sum);
                  }
                  if (Value half = stagedHalf(operand.get()))
                    return memref::LoadOp::create(
                        b, loc, hBuffer, ValueRange{half, row, column});
                  return memref::LoadOp::create(
                      b, loc, views.lookupOrDefault(operand.get()),
                      indices(pw.getMatchingIndexingMap(&operand), row,
                              column));
                },
                [&](OpOperand &init, Value result) {
                  if (init.get() == next) {
                    memref::StoreOp::create(
                        b, loc, result, hBuffer,
                        ValueRange{nextParity, row, column});
                    Value value = result;
                    if (!value.getType().isF32())
                      value =
                          arith::ExtFOp::create(b, loc, b.getF32Type(), value);
                    call("publish", {value, toI32(tileRow), toI32(unit),
                                     batch32, exchangeOut});
                  } else
                    memref::StoreOp::create(
                        b, loc, result, views.lookupOrDefault(init.get()),
                        indices(pw.getMatchingIndexingMap(&init), row, column));
                });
          });
      call("release", {counterPtr, exchangeOut, batch32,
                       toI32(arith::AddIOp::create(b, loc, phase, c1))});
      firstGate += r.gates;
    }
  }

private:
  ArrayRef<StepRecurrence> stages;
};

/// The backward's kernel (rnn::AdjointRecurrence): per step the cell's
/// adjoint group for this block's units, which writes the step's gate
/// gradients into one half of a [2, B, G*H (+ 8)] buffer beside P, the
/// release, then the library's product of those gradients: the next step's
/// state gradient dh (added to what the group wrote into S where the product
/// accumulates onto it, the GRU's dh ⊙ z). After the last step, dh goes to
/// S.
class AdjointKernelBuilder : GridKernelBuilderBase {
public:
  AdjointKernelBuilder(const rnn::AdjointRecurrence &r, OpBuilder &b,
                       Location loc)
      : GridKernelBuilderBase(persistent::Direction::Backward,
                              *rnn::deviceLibraryOperands(r),
                              r.gradientElementType(), r.gates, r.hidden,
                              r.loop, r.pointwise, b, loc),
        r(r) {}

  void build(gpu::LaunchOp launch, Value steps, Value batch, Value tileRows,
             Value gradientBuffer, Value counter) {
    Value thread = launch.getThreadIds().x;
    Value block = launch.getBlockIds().x;
    setTile(launch, batch, tileRows);
    Value weights = fragments();
    begin(r.weight, weights);
    Value base = pointerTo(gradientBuffer), counterPtr = tileCounter(counter);
    Value batch32 = toI32(tileBatch);
    Value c0 = constant(0), c1 = constant(1), c2 = constant(2);
    llvm::SetVector<Operation *> needed = rnn::opsNeededByGroup(r);
    Value last = arith::SubIOp::create(b, loc, steps, c1);
    // The state gradient this element starts a step from: S as the loop
    // found it at the first step; then the product's sum (onto what the
    // group wrote into S where the product accumulates).
    auto stateGradient = [&](Value first, Value unit, Value tileRow, Value row,
                             Value column) -> Value {
      auto choice = scf::IfOp::create(b, loc, TypeRange{b.getF32Type()}, first,
                                      /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      scf::YieldOp::create(b, loc,
                           ValueRange{memref::LoadOp::create(
                               b, loc, r.state, ValueRange{row, column})});
      b.setInsertionPointToStart(&choice.getElseRegion().front());
      Value sum =
          call("sum", {toI32(c0), toI32(tileRow), toI32(unit)}).getResult(0);
      if (r.accumulates)
        sum = arith::AddFOp::create(
            b, loc,
            memref::LoadOp::create(b, loc, r.state, ValueRange{row, column}),
            sum);
      scf::YieldOp::create(b, loc, ValueRange{sum});
      return choice.getResult(0);
    };

    auto stepLoop = scf::ForOp::create(b, loc, c0, steps, c1);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(stepLoop.getBody());
      Value step = stepLoop.getInductionVar();
      Value parity = arith::RemUIOp::create(b, loc, step, c2);
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, step, c0);
      IRMapping views = viewsFor(step, needed);

      forEachElement(
          thread, block,
          [&](Value unit, Value tileRow, Value row, Value column) {
            cloneGroup(
                // (An init the body reads holds what the loop's last step
                // left there: the kernel writes every init as the loop does.)
                [&](OpOperand &operand) -> Value {
                  if (operand.get() == r.state)
                    return stateGradient(first, unit, tileRow, row, column);
                  return memref::LoadOp::create(
                      b, loc, views.lookupOrDefault(operand.get()),
                      indices(pw.getMatchingIndexingMap(&operand), row,
                              column));
                },
                // Every init as the loop writes it (P's windows too: the
                // loop leaves the last step's gradients there), and each
                // gate gradient also into the half the product stages.
                [&](OpOperand &init, Value result) {
                  memref::StoreOp::create(
                      b, loc, result, views.lookupOrDefault(init.get()),
                      indices(pw.getMatchingIndexingMap(&init), row, column));
                  unsigned index =
                      init.getOperandNumber() - pw.getNumDpsInputs();
                  if (std::optional<int64_t> gate = r.gateOfInit[index]) {
                    Value k = arith::AddIOp::create(
                        b, loc, constant(*gate * padded), column);
                    if (result.getType() != elementType)
                      result =
                          arith::TruncFOp::create(b, loc, elementType, result);
                    memref::StoreOp::create(b, loc, result, gradientBuffer,
                                            ValueRange{parity, row, k});
                  }
                });
          });
      // (The backward's gradients go through the counter and bulk copies:
      // no low-latency exchange.)
      Value none = toI32(c0);
      call("release", {counterPtr, nullPointer(), none, none});
      Value staged = stagedRows(base, batch, parity);
      Value step32 = toI32(step);
      call("stage", {toI32(arith::AddIOp::create(b, loc, step, c1)), batch32,
                     staged, counterPtr, nullPointer()});
      // What the next step's group reads, into L1 while the gradients come
      // in and the block multiplies (after the wait, whose acquire empties
      // L1).
      Value next = arith::MinUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, step, c1), last);
      IRMapping nextViews = viewsFor(next, needed);
      forEachElement(thread, block, [&](Value, Value, Value row, Value column) {
        prefetchInputs(nextViews, row, column, [&](OpOperand &operand) {
          return operand.get() != r.state;
        });
      });
      call("multiply",
           {step32, batch32, weights,
            arith::ConstantIntOp::create(b, loc, 0, 32),
            arith::ConstantIntOp::create(b, loc, layout.rowTiles, 32)});
    }
    // S after the loop: the last step's product.
    forEachElement(
        thread, block, [&](Value unit, Value tileRow, Value row, Value column) {
          Value notFirst =
              arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
          memref::StoreOp::create(
              b, loc, stateGradient(notFirst, unit, tileRow, row, column),
              r.state, ValueRange{row, column});
        });
  }

private:
  const rnn::AdjointRecurrence &r;
};

} // namespace

/// The function type of `signature` (PersistentRecurrence.h's spelling).
static FunctionType
functionTypeOf(MLIRContext *ctx,
               const persistent::EntryPointSignature &signature) {
  auto typeOf = [&](char c) -> Type {
    switch (c) {
    case 'i':
      return IntegerType::get(ctx, 32);
    case 'f':
      return Float32Type::get(ctx);
    default:
      assert(c == 'p' && "i, f or p");
      return LLVM::LLVMPointerType::get(ctx);
    }
  };
  SmallVector<Type> parameters;
  for (const char *c = signature.parameters; *c; ++c)
    parameters.push_back(typeOf(*c));
  SmallVector<Type> results;
  if (signature.result != 'v')
    results.push_back(typeOf(signature.result));
  return FunctionType::get(ctx, parameters, results);
}

/// Declares the library entry points for (direction, gates, hidden) in
/// `module`.
static void declareEntryPoints(ModuleOp module, persistent::Direction direction,
                               persistent::Operands operands, int64_t gates,
                               int64_t hidden) {
  MLIRContext *ctx = module.getContext();
  for (const persistent::EntryPointSignature &signature :
       persistent::kEntryPointSignatures)
    declareFunction(module,
                    persistent::entryPointName(direction, operands, gates,
                                               persistent::paddedHidden(hidden),
                                               signature.entry),
                    functionTypeOf(ctx, signature));
  for (const persistent::EntryPointSignature &signature :
       persistent::kSharedEntryPointSignatures)
    declareFunction(module, ("rnn_persistent_" + Twine(signature.entry)).str(),
                    functionTypeOf(ctx, signature));
}

/// Zeroes `buffer` (the kernel's staged vectors) where the layout pads H:
/// the padding columns are multiplied by zero weights, and must not hold
/// NaNs.
static void zeroPadding(OpBuilder &b, Location loc, Value buffer, bool pads) {
  if (!pads)
    return;
  Type type = cast<MemRefType>(buffer.getType()).getElementType();
  linalg::FillOp::create(
      b, loc,
      ValueRange{arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0))},
      ValueRange{buffer});
}

/// The buffers a grid-wide kernel shares between its blocks: the staged
/// vector's double buffer ([2, B, the layout's row stride]), a step
/// counter per batch tile, and (the forward's, where its layout has one:
/// lowLatencyMaxRows) low-latency buffer ([2, B, words of a row] of 8-byte
/// words) with an i32 that says whether the tiles use it (none has more
/// rows than the layout's limit, and the runtime's
/// rnn_cuda_persistent_low_latency allows it), zeroed where they do.
struct GridBuffers {
  Value staged, counter, exchange, lowLatency;
  /// What `prepare` allocated for the kernel, freed after it.
  SmallVector<Value> temporaries;
};

/// How the batch is split: `tiles` tiles of `tileRows` rows (the last may
/// have fewer), each run by its own copy of the layout's blocks (launch.y).
/// The tiles never wait for each other, so a batch runs on as many of the
/// GPU's multiprocessors as it has rows for: the runtime says how many
/// copies of the grid the device holds (rnn_cuda_persistent_batch_tiles),
/// and the batch is spread over at most that many tiles, or over one per 8
/// rows (the mma's n) where it has fewer: ceil(B / tiles) rows a tile,
/// rounded up to a multiple of 8, which may leave fewer tiles (B = 40 over
/// at most 4: three of 16, 16 and 8). It fits when its tiles need at most
/// the layout's rows.
struct BatchTiles {
  Value tiles, tileRows, fits;
};

static BatchTiles splitBatch(OpBuilder &b, Location loc, Value batch,
                             const persistent::Layout &layout) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto ceilDiv = [&](Value x, Value y) -> Value {
    return arith::CeilDivUIOp::create(b, loc, x, y);
  };
  Value limit = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      func::CallOp::create(
          b, loc, kBatchTiles, TypeRange{b.getI32Type()},
          ValueRange{arith::ConstantIntOp::create(b, loc, layout.blocks, 32)})
          .getResult(0));
  Value eight = index(persistent::kBatchTile);
  Value tiles = arith::MaxUIOp::create(
      b, loc, arith::MinUIOp::create(b, loc, limit, ceilDiv(batch, eight)),
      index(1));
  Value tileRows = arith::MaxUIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, ceilDiv(ceilDiv(batch, tiles), eight),
                            eight),
      eight);
  Value fits = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, batch, index(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, tileRows,
                            index(layout.maxBatch)));
  return {ceilDiv(batch, tileRows), tileRows, fits};
}

/// Runs `loop`, a recurrence of `gates` gates and `hidden` units in
/// `direction` whose product multiplies `elementType` (as `operands`), as
/// the grid-wide
/// kernel of its layout, one copy of its blocks per batch tile
/// (splitBatch), for sequences of at least kMinSteps, keeping the loop as
/// the fallback. The buffers (the staged vector's, zeroed where the layout
/// pads H, and the counters) are allocated for the launch; `prepare` writes
/// what else the kernel reads before it, `buildBody` the kernel (B, the
/// rows of a tile), `finish` what follows a launch that ran.
static void rewriteAsGridKernel(
    persistent::Direction direction, persistent::Operands operands,
    Type elementType, int64_t gates, int64_t hidden, scf::ForOp loop,
    Value state,
    function_ref<void(OpBuilder &, Value batch, GridBuffers &)> prepare,
    function_ref<void(OpBuilder &, gpu::LaunchOp, Value batch, Value tileRows,
                      const GridBuffers &)>
        buildBody,
    function_ref<void(OpBuilder &, const GridBuffers &)> finish) {
  ModuleOp module = loop->getParentOfType<ModuleOp>();
  MLIRContext *ctx = module.getContext();
  declareEntryPoints(module, direction, operands, gates, hidden);
  const int64_t padded = persistent::paddedHidden(hidden);
  persistent::Layout layout =
      persistent::layoutFor(direction, operands, gates, padded);
  // The most rows of a tile that take the low-latency exchange (0: none,
  // the backward's and the layouts whose lanes have no registers for it).
  const int64_t lowLatencyRows = persistent::lowLatencyMaxRows(
      layout, direction, operands, static_cast<int>(padded));
  auto stagedType =
      MemRefType::get({2, ShapedType::kDynamic,
                       persistent::stagedRowElements(layout.stagedWidth)},
                      elementType);
  declareFunction(module, kRequireResident, FunctionType::get(ctx, {}, {}));
  declareFunction(module, kTakeRefused,
                  FunctionType::get(ctx, {}, {IntegerType::get(ctx, 32)}));
  declareFunction(module, kBatchTiles,
                  FunctionType::get(ctx, {IntegerType::get(ctx, 32)},
                                    {IntegerType::get(ctx, 32)}));
  declareFunction(module, kLowLatency,
                  FunctionType::get(ctx, {}, {IntegerType::get(ctx, 32)}));
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // The library's shapes: tiles of up to the layout's rows; a sequence long
  // enough to repay the kernel's set-up.
  Value batch = memref::DimOp::create(b, loc, state, 0);
  BatchTiles split = splitBatch(b, loc, batch, layout);
  Value fits = arith::AndIOp::create(
      b, loc, split.fits,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                            loop.getUpperBound(),
                            index(persistent::kMinSteps)));
  auto attempt = scf::IfOp::create(b, loc, TypeRange{b.getI1Type()}, fits,
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&attempt.getThenRegion().front());
    GridBuffers buffers;
    buffers.staged =
        memref::AllocOp::create(b, loc, stagedType, ValueRange{batch});
    buffers.counter = memref::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
        ValueRange{split.tiles});
    linalg::FillOp::create(
        b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 32)},
        ValueRange{buffers.counter});
    if (lowLatencyRows > 0) {
      // Where the tiles use it (the runtime allows it and none has more
      // than the layout's rows for it), B rows a half, zeroed: a word of step t
      // is never stale (the kernel's first wait is for step 1); else no rows.
      Value enabled = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          func::CallOp::create(b, loc, kLowLatency, TypeRange{b.getI32Type()},
                               ValueRange{})
              .getResult(0),
          arith::ConstantIntOp::create(b, loc, 0, 32));
      // (A tile's rows: tileRows, a multiple of 8, or all of a smaller
      // batch.)
      Value used = arith::AndIOp::create(
          b, loc, enabled,
          arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ule,
              arith::MinUIOp::create(b, loc, split.tileRows, batch),
              index(lowLatencyRows)));
      buffers.lowLatency = arith::ExtUIOp::create(b, loc, b.getI32Type(), used);
      buffers.exchange = memref::AllocOp::create(
          b, loc,
          MemRefType::get(
              {2, ShapedType::kDynamic,
               persistent::lowLatencyRowWords(layout.stagedWidth, operands)},
              b.getI64Type()),
          ValueRange{arith::SelectOp::create(b, loc, used, batch, index(0))});
      auto zero = scf::IfOp::create(b, loc, used, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard inZero(b);
      b.setInsertionPointToStart(&zero.getThenRegion().front());
      linalg::FillOp::create(
          b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 64)},
          ValueRange{buffers.exchange});
    }
    zeroPadding(b, loc, buffers.staged, padded != hidden);
    prepare(b, batch, buffers);
    func::CallOp::create(b, loc, kRequireResident, TypeRange{}, ValueRange{});
    Value one = index(1);
    auto launch = gpu::LaunchOp::create(
        b, loc, index(layout.blocks), split.tiles, one, index(layout.threads),
        one, one, arith::ConstantIntOp::create(b, loc, layout.sharedBytes, 32),
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
      buildBody(b, launch, batch, split.tileRows, buffers);
      gpu::TerminatorOp::create(b, loc);
    }
    Value refused =
        func::CallOp::create(b, loc, kTakeRefused, TypeRange{b.getI32Type()},
                             ValueRange{})
            .getResult(0);
    Value ran =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, refused,
                              arith::ConstantIntOp::create(b, loc, 0, 32));
    auto after = scf::IfOp::create(b, loc, ran, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard inAfter(b);
      b.setInsertionPointToStart(&after.getThenRegion().front());
      finish(b, buffers);
    }
    memref::DeallocOp::create(b, loc, buffers.staged);
    memref::DeallocOp::create(b, loc, buffers.counter);
    if (buffers.exchange)
      memref::DeallocOp::create(b, loc, buffers.exchange);
    for (Value temporary : buffers.temporaries)
      memref::DeallocOp::create(b, loc, temporary);
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
}

/// Runs a forward step loop of one product and group (`stages` of one) or
/// of dependent stages (`gates`: all stages' together) as the grid-wide
/// kernel.
static void rewriteForward(ArrayRef<StepRecurrence> stages, int64_t gates) {
  const StepRecurrence &first = stages.front();
  // Before this adds uses of S of its own.
  bool copyBack = !rnn::isLoopScratch(first.state, first.loop);
  scf::ForOp loop = first.loop;
  Location loc = loop.getLoc();
  Value steps = loop.getUpperBound();
  const int64_t hidden = first.hidden;
  // The staged vectors alternate between the two halves of the staged
  // buffer (B rows of the layout's columns and 8 of padding): every block
  // reads its tile's rows of one exchange's vector while the others write
  // the next. Exchange m·t + s holds stage s's vector of step t.
  Value batch;
  // Half `which` of the buffer as [B, H] (rows: the layout's stride).
  auto half = [&](OpBuilder &b, Value hBuffer, Value which) {
    SmallVector<OpFoldResult> offsets = {which, b.getIndexAttr(0),
                                         b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), batch,
                                       b.getIndexAttr(hidden)};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    auto type = memref::SubViewOp::inferRankReducedResultType(
        {ShapedType::kDynamic, hidden}, cast<MemRefType>(hBuffer.getType()),
        offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(type), hBuffer,
                                     offsets, sizes, strides);
  };
  Value weight = first.weight;
  rewriteAsGridKernel(
      persistent::Direction::Forward, *rnn::deviceLibraryOperands(first),
      first.stateElementType(), gates, hidden, loop, first.state,
      [&](OpBuilder &b, Value rows, GridBuffers &buffers) {
        batch = rows;
        memref::CopyOp::create(
            b, loc, first.state,
            half(b, buffers.staged, arith::ConstantIndexOp::create(b, loc, 0)));
        if (stages.size() == 1)
          return;
        // The library loads a block's rows from one [gates·H, H] weight,
        // gate-major: the stages' weights one after the other ([H, G·H]
        // ones transposed).
        auto type = MemRefType::get(
            {gates * hidden, hidden},
            cast<MemRefType>(first.weight.getType()).getElementType());
        weight = memref::AllocOp::create(b, loc, type);
        buffers.temporaries.push_back(weight);
        int64_t row = 0;
        for (const StepRecurrence &stage : stages) {
          int64_t rows = stage.gates * hidden;
          SmallVector<OpFoldResult> offsets = {b.getIndexAttr(row),
                                               b.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows),
                                             b.getIndexAttr(hidden)};
          SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
          Value stageRows = memref::SubViewOp::create(b, loc, weight, offsets,
                                                      sizes, strides);
          if (stage.weightInOut)
            linalg::TransposeOp::create(b, loc, stage.weight, stageRows,
                                        ArrayRef<int64_t>{1, 0});
          else
            memref::CopyOp::create(b, loc, stage.weight, stageRows);
          row += rows;
        }
      },
      [&](OpBuilder &b, gpu::LaunchOp launch, Value rows, Value tileRows,
          const GridBuffers &buffers) {
        KernelBuilder(stages, gates, b, loc)
            .build(launch, steps, rows, tileRows, weight, buffers.staged,
                   buffers.counter, buffers.exchange, buffers.lowLatency);
      },
      [&](OpBuilder &b, const GridBuffers &buffers) {
        if (!copyBack)
          return;
        // The state after the last step: exchange m·T's vector.
        Value exchanges = arith::MulIOp::create(
            b, loc, steps,
            arith::ConstantIndexOp::create(
                b, loc, static_cast<int64_t>(stages.size())));
        memref::CopyOp::create(
            b, loc,
            half(b, buffers.staged,
                 arith::RemUIOp::create(
                     b, loc, exchanges,
                     arith::ConstantIndexOp::create(b, loc, 2))),
            first.state);
      });
}

static void rewrite(const rnn::AdjointRecurrence &r) {
  scf::ForOp loop = r.loop;
  Location loc = loop.getLoc();
  Value steps = loop.getUpperBound();
  // The step's gate gradients as the product stages them: step t's in half
  // t % 2 (B rows of G times the layout's H and 8 of padding), which the
  // other blocks of the tile read while this one writes the next step's.
  rewriteAsGridKernel(
      persistent::Direction::Backward, *rnn::deviceLibraryOperands(r),
      r.gradientElementType(), r.gates, r.hidden, loop, r.state,
      [](OpBuilder &, Value, GridBuffers &) {},
      [&](OpBuilder &b, gpu::LaunchOp launch, Value rows, Value tileRows,
          const GridBuffers &buffers) {
        AdjointKernelBuilder(r, b, loc).build(launch, steps, rows, tileRows,
                                              buffers.staged, buffers.counter);
      },
      [](OpBuilder &, const GridBuffers &) {});
}

namespace {

struct ConvertStepLoopsToPersistentKernelsPass
    : rnn::impl::ConvertStepLoopsToPersistentKernelsBase<
          ConvertStepLoopsToPersistentKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StepRecurrence> found;
    SmallVector<rnn::StagedRecurrence, 1> staged;
    SmallVector<rnn::AdjointRecurrence> adjoints;
    module.walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<gpu::LaunchOp>())
        return;
      if (FailureOr<StepRecurrence> r = rnn::matchStepRecurrence(loop);
          succeeded(r)) {
        if (rnn::runsOnDeviceLibrary(*r))
          found.push_back(*r);
      } else if (FailureOr<rnn::StagedRecurrence> stages =
                     rnn::matchStagedRecurrence(loop);
                 succeeded(stages)) {
        if (rnn::runsOnDeviceLibrary(*stages))
          staged.push_back(*stages);
      } else if (FailureOr<rnn::AdjointRecurrence> adjoint =
                     rnn::matchAdjointRecurrence(loop);
                 succeeded(adjoint) && rnn::runsOnDeviceLibrary(*adjoint)) {
        adjoints.push_back(*adjoint);
      }
    });
    for (const StepRecurrence &r : found)
      rewriteForward(r, r.gates);
    for (const rnn::StagedRecurrence &r : staged)
      rewriteForward(r.stages, r.gates);
    for (const rnn::AdjointRecurrence &r : adjoints)
      rewrite(r);
  }
};

} // namespace
