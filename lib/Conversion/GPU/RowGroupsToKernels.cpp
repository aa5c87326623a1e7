//===- RowGroupsToKernels.cpp - A fused group with reductions per kernel --===//
//
// A fused pointwise group with row reductions (a layer norm, a softmax)
// lowers to phases separated by reductions: a generic per phase and one per
// reduction, each its own kernel. Every one of them only combines elements
// of one row, so the whole group can run as one kernel with a block per
// row: the block walks a phase's row with its threads, reduces a row with
// warp shuffles and a round through shared memory, and goes on to the next
// phase with the row's sums in registers. A step of the LayerNorm LSTM goes
// from dozens of launches to one.
//
// Thread t always takes columns t, t + blockDim, ... of every phase, so a
// thread reads back only what it wrote itself; a barrier is placed only
// where another thread's write may be read (or overwritten) otherwise. Where
// a row's columns are unrolled, what a thread stored for a column stays in
// its registers, later phases read it from there, and a temporary buffer
// that nothing reads any more is not written at all.
//
//===----------------------------------------------------------------------===//

#include "../BufferViews.h"
#include "GuardedLaunch.h"
#include "RowReduction.h"
#include "rnn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/MathExtras.h"

#include <tuple>

namespace rnn {
#define GEN_PASS_DEF_CONVERTROWGROUPSTOKERNELS
#include "rnn/Conversion/Passes.h.inc"
} // namespace rnn

using namespace mlir;

namespace {

bool isAllocation(Value root) {
  return root.getDefiningOp<memref::AllocOp>() ||
         root.getDefiningOp<memref::AllocaOp>() ||
         root.getDefiningOp<gpu::AllocOp>();
}

/// Whether `root` is an argument of the function around it.
bool isFunctionArgument(Value root) {
  auto argument = dyn_cast<BlockArgument>(root);
  return argument &&
         isa<FunctionOpInterface>(argument.getOwner()->getParentOp());
}

/// Distinct allocations never overlap; anything else (function arguments,
/// loop-carried buffers) may overlap anything but an allocation, except
/// that with `distinctArguments` two different function arguments do not.
bool mayAlias(Value a, Value b, bool distinctArguments) {
  Value ra = rnn::rootBuffer(a), rb = rnn::rootBuffer(b);
  if (ra == rb)
    return true;
  if (isAllocation(ra) || isAllocation(rb))
    return false;
  return !(distinctArguments && isFunctionArgument(ra) &&
           isFunctionArgument(rb));
}

/// One memory access of a kernel phase: `identity` when element (row, j)
/// is accessed by the thread that owns column j.
struct Access {
  Value buffer;
  bool write;
  bool identity;
};

/// Whether two accesses by different threads may touch the same element
/// with one of them writing.
bool conflict(const Access &a, const Access &b, bool distinctArguments) {
  if (!a.write && !b.write)
    return false;
  if (a.buffer == b.buffer && a.identity && b.identity)
    return false;
  return mayAlias(a.buffer, b.buffer, distinctArguments);
}

/// The ops of one marked group, in order, and what the kernel does with
/// the other ops between them.
struct RowGroup {
  SmallVector<Operation *> span; // From the first to the last op it takes.
  DenseSet<Operation *> members; // Linalg ops that become kernel code.
  SmallVector<Operation *> hoisted;
  SmallVector<Operation *> sunk; // Deallocations after the kernel.
};

/// Whether `map` only selects dimensions and constants.
bool isSelection(AffineMap map) {
  return llvm::all_of(map.getResults(), [](AffineExpr e) {
    return isa<AffineDimExpr, AffineConstantExpr>(e);
  });
}

/// Whether a buffer of `type` holds one value per row.
bool isPerRow(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return type.getRank() >= 1 && type.getShape().back() == 1;
}

/// Whether `map` reads a per-row buffer at (row..., 0).
bool readsRowValue(AffineMap map) {
  unsigned rank = map.getNumDims();
  if (map.getNumResults() != rank)
    return false;
  for (unsigned d = 0; d + 1 < rank; ++d)
    if (map.getResult(d) != getAffineDimExpr(d, map.getContext()))
      return false;
  auto last = dyn_cast<AffineConstantExpr>(map.getResult(rank - 1));
  return last && last.getValue() == 0;
}

/// Whether `op` is a linalg op this pass can run inside a row's block: a
/// parallel generic, fill or copy on buffers whose outputs are written
/// where they are computed, or a row reduction.
bool isRowLocal(linalg::LinalgOp op, int64_t rank) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != rank)
    return false;
  if (isa<linalg::FillOp, linalg::CopyOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return false;
  if (rnn::matchRowReduction(generic))
    return true;
  if (generic.getNumParallelLoops() != rank)
    return false;
  for (OpOperand &init : generic.getDpsInitsMutable())
    if (!generic.getMatchingIndexingMap(&init).isIdentity())
      return false;
  if (!llvm::all_of(generic.getIndexingMapsArray(), isSelection))
    return false;
  // Bodies that ask for their indices or have side effects stay out.
  return !generic.getBlock()
              ->walk([](Operation *nested) {
                return isa<linalg::IndexOp>(nested) ||
                               !isMemoryEffectFree(nested)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

struct ConvertRowGroupsToKernelsPass
    : public rnn::impl::ConvertRowGroupsToKernelsBase<
          ConvertRowGroupsToKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    // The marked ops of each group, block by block.
    llvm::MapVector<std::pair<Block *, int64_t>, SmallVector<Operation *>>
        marked;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (auto id = op->getAttrOfType<IntegerAttr>(rnn::kRowGroupAttr))
        marked[{op->getBlock(), id.getInt()}].push_back(op);
    });
    for (auto &[key, ops] : marked) {
      // A converted group's ops (all of them members) are gone; otherwise
      // they are mapped by the other kernel passes.
      if (std::optional<RowGroup> group = collect(ops))
        convert(*group);
      else
        for (Operation *op : ops)
          op->removeAttr(rnn::kRowGroupAttr);
    }
  }

  /// The span of `ops` with the ops around and between them that the
  /// kernel can absorb: initialisations of the group's buffers before it
  /// and between its ops, pure computations (hoisted before the kernel),
  /// deallocations (sunk after it). None when something else sits between.
  static std::optional<RowGroup> collect(ArrayRef<Operation *> ops) {
    int64_t rank = cast<linalg::LinalgOp>(ops.front()).getNumLoops();
    if (rank < 2)
      return std::nullopt;
    DenseSet<Value> groupBuffers;
    for (Operation *op : ops)
      for (Value operand : op->getOperands())
        if (isa<MemRefType>(operand.getType()))
          groupBuffers.insert(operand);
    // A fill or copy that only initialises buffers of the group.
    auto initialises = [&](Operation *op) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      return linalgOp && isa<linalg::FillOp, linalg::CopyOp>(op) &&
             isRowLocal(linalgOp, rank) &&
             groupBuffers.contains(linalgOp.getDpsInits()[0]);
    };

    RowGroup group;
    Operation *first = ops.front();
    // Initialisations just before the group belong to it.
    while (Operation *prev = first->getPrevNode()) {
      if (!initialises(prev) &&
          !(isMemoryEffectFree(prev) && prev->getNumRegions() == 0))
        break;
      first = prev;
    }
    for (Operation *op = first;; op = op->getNextNode()) {
      group.span.push_back(op);
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (llvm::is_contained(ops, op)) {
        if (!isRowLocal(linalgOp, rank))
          return std::nullopt;
        group.members.insert(op);
        for (Value operand : op->getOperands())
          if (isa<MemRefType>(operand.getType()))
            groupBuffers.insert(operand);
      } else if (initialises(op)) {
        group.members.insert(op);
      } else if (isMemoryEffectFree(op) && op->getNumRegions() == 0) {
        group.hoisted.push_back(op);
      } else if (isa<memref::DeallocOp, gpu::DeallocOp>(op) &&
                 op->getNumResults() == 0) {
        group.sunk.push_back(op);
      } else {
        return std::nullopt;
      }
      if (op == ops.back())
        break;
    }
    // Pure ops before the first member are part of the span only to be
    // hoisted; the reductions must agree on their element type.
    Type reductionType;
    for (Operation *op : group.members)
      if (auto generic = dyn_cast<linalg::GenericOp>(op))
        if (rnn::matchRowReduction(generic)) {
          Type type = generic.getBlock()->getArgument(0).getType();
          if (reductionType && reductionType != type)
            return std::nullopt;
          reductionType = type;
        }
    return group;
  }

  /// The buffers of the group's ops that are used outside its span (other
  /// than being measured or freed), or that are views or arguments, which
  /// may be read through other values: the kernel must store what it
  /// computes into them.
  static DenseSet<Value> escapingBuffers(const RowGroup &group) {
    DenseSet<Operation *> inSpan(group.span.begin(), group.span.end());
    DenseSet<Value> escaping;
    for (Operation *op : group.members)
      for (Value buffer : op->getOperands()) {
        if (!isa<MemRefType>(buffer.getType()))
          continue;
        if (!isAllocation(buffer) ||
            llvm::any_of(buffer.getUsers(), [&](Operation *user) {
              return !inSpan.contains(user) &&
                     !isa<memref::DimOp, memref::DeallocOp, gpu::DeallocOp>(
                         user);
            }))
          escaping.insert(buffer);
      }
    return escaping;
  }

  void convert(RowGroup &group) {
    DenseSet<Value> escaping = escapingBuffers(group);
    Operation *anchor = nullptr;
    for (Operation *op : group.span)
      if (group.members.contains(op)) {
        anchor = op;
        break;
      }
    for (Operation *op : group.hoisted)
      op->moveBefore(anchor);
    auto firstOp = cast<linalg::LinalgOp>(anchor);
    Location loc = anchor->getLoc();
    OpBuilder b(anchor);

    // Sizes, computed on the host: the rows (all but the last loop, the
    // same for every op of the group) and each op's row length.
    SmallVector<Operation *> members;
    for (Operation *op : group.span)
      if (group.members.contains(op))
        members.push_back(op);
    SmallVector<Value> rowSizes;
    Value rows = arith::ConstantIndexOp::create(b, loc, 1);
    // drop_end keeps iterators, not the container: the ranges are a named
    // vector, since a temporary would die before the loop runs.
    SmallVector<Range> loopRanges = firstOp.createLoopRanges(b, loc);
    for (Range range : llvm::drop_end(loopRanges)) {
      rowSizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
      rows = arith::MulIOp::create(b, loc, rows, rowSizes.back());
    }
    DenseMap<Operation *, Value> rowLengths;
    int64_t widest = 0;
    int64_t reductionCount = 0;
    Type reductionType;
    for (Operation *op : members) {
      auto linalgOp = cast<linalg::LinalgOp>(op);
      OpFoldResult length = linalgOp.createLoopRanges(b, loc).back().size;
      rowLengths[op] = getValueOrCreateConstantIndexOp(b, loc, length);
      std::optional<int64_t> known = getConstantIntValue(length);
      widest = std::max(widest, known ? *known : blockSize);
      if (auto generic = dyn_cast<linalg::GenericOp>(op);
          generic && rnn::matchRowReduction(generic)) {
        ++reductionCount;
        reductionType = generic.getBlock()->getArgument(0).getType();
      }
    }
    // Enough threads for the widest row, in whole warps.
    int64_t threads = std::min<int64_t>(
        blockSize, llvm::alignTo(std::max<int64_t>(widest, 1), rnn::kWarpSize));
    int64_t warps = threads / rnn::kWarpSize;
    SmallVector<Type> sharedTypes;
    if (reductionCount)
      sharedTypes.push_back(MemRefType::get(
          {reductionCount * warps}, reductionType, MemRefLayoutAttrInterface{},
          gpu::AddressSpaceAttr::get(b.getContext(),
                                     gpu::AddressSpace::Workgroup)));
    Value block = arith::ConstantIndexOp::create(b, loc, threads);
    gpu::LaunchOp launch =
        rnn::createGuardedLaunch(b, loc, rows, rows, block, sharedTypes);
    Operation *guard = launch->getParentOp();

    KernelBuilder kernel(launch, rowSizes, threads, escaping,
                         distinctArguments);
    kernel.emit(members, rowLengths);

    // The group's ops are kernel code now.
    for (Operation *op : group.sunk)
      op->moveAfter(guard);
    for (Operation *op : llvm::reverse(members))
      op->erase();
    kernel.eraseUnreadStores();
  }

  /// Emits the body of a group's kernel.
  class KernelBuilder {
  public:
    KernelBuilder(gpu::LaunchOp launch, ArrayRef<Value> rowSizes,
                  int64_t threads, const DenseSet<Value> &escaping,
                  bool distinctArguments)
        : launch(launch), escaping(escaping), threads(threads),
          distinctArguments(distinctArguments),
          b(OpBuilder::atBlockBegin(&launch.getBody().front())) {
      loc = launch.getLoc();
      thread = launch.getThreadIds().x;
      zero = arith::ConstantIndexOp::create(b, loc, 0);
      step = arith::ConstantIndexOp::create(b, loc, threads);
      // Row-major delinearisation of the block index.
      row.resize(rowSizes.size());
      Value rest = launch.getBlockIds().x;
      for (int64_t d = rowSizes.size() - 1; d >= 0; --d) {
        row[d] = d == 0
                     ? rest
                     : Value(arith::RemUIOp::create(b, loc, rest, rowSizes[d]));
        if (d > 0)
          rest = arith::DivUIOp::create(b, loc, rest, rowSizes[d]);
      }
      if (!launch.getWorkgroupAttributions().empty())
        shared = launch.getWorkgroupAttributions().front();
      // Loads hoisted to the start of the kernel go before this marker.
      prologueEnd = arith::ConstantIndexOp::create(b, loc, 0);
    }

    void emit(ArrayRef<Operation *> members,
              const DenseMap<Operation *, Value> &rowLengths) {
      for (Operation *op : members)
        for (Value init : cast<linalg::LinalgOp>(op).getDpsInits())
          written.push_back(init);
      SmallVector<std::pair<linalg::GenericOp, Operation *>> pending;
      auto flush = [&] {
        if (!pending.empty())
          emitReductions(pending, rowLengths);
        pending.clear();
      };
      for (Operation *op : members) {
        if (auto generic = dyn_cast<linalg::GenericOp>(op))
          if (Operation *combiner = rnn::matchRowReduction(generic)) {
            // Reductions of the same length share one pass over the row.
            if (!pending.empty() &&
                !isEqualConstantIntOrValue(
                    rowLengths.lookup(pending.front().first),
                    rowLengths.lookup(op)))
              flush();
            pending.push_back({generic, combiner});
            continue;
          }
        if (isSymbolic(op))
          continue;
        flush();
        emitElementwise(cast<linalg::LinalgOp>(op), rowLengths.lookup(op));
      }
      flush();
      gpu::TerminatorOp::create(b, loc);
    }

    /// Erases stores into the group's own temporaries (allocations that
    /// nothing outside the kernel uses, once the group's ops are gone) that
    /// no load in the kernel reads: every later phase took the values from
    /// registers.
    void eraseUnreadStores() {
      DenseSet<Value> read;
      launch.getBody().walk([&](memref::LoadOp load) {
        read.insert(rnn::rootBuffer(load.getMemRef()));
      });
      SmallVector<memref::StoreOp> unread;
      launch.getBody().walk([&](memref::StoreOp store) {
        Value buffer = store.getMemRef();
        if (isAllocation(buffer) && !escaping.contains(buffer) &&
            !read.contains(buffer) &&
            llvm::all_of(buffer.getUsers(), [&](Operation *user) {
              return launch->isProperAncestor(user) ||
                     isa<memref::DimOp, memref::DeallocOp, gpu::DeallocOp>(
                         user);
            }))
          unread.push_back(store);
      });
      for (memref::StoreOp store : unread)
        store.erase();
    }

  private:
    /// A fill or copy of a per-row buffer that nothing outside the group
    /// reads, whose value is known in registers: no code, only bookkeeping.
    bool isSymbolic(Operation *op) {
      auto linalgOp = cast<linalg::LinalgOp>(op);
      if (!isa<linalg::FillOp, linalg::CopyOp>(op))
        return false;
      Value out = linalgOp.getDpsInits()[0];
      if (!isPerRow(out) || escaping.contains(out))
        return false;
      Value value = isa<linalg::FillOp>(op)
                        ? linalgOp.getDpsInputs()[0]
                        : rowValues.lookup(linalgOp.getDpsInputs()[0]);
      if (!value)
        return false;
      rowValues[out] = value;
      return true;
    }

    /// Places a barrier before `accesses` if one of them may touch what
    /// another thread accessed since the last barrier.
    void order(ArrayRef<Access> accesses) {
      bool needed = llvm::any_of(accesses, [&](const Access &a) {
        return llvm::any_of(sinceBarrier, [&](const Access &e) {
          return conflict(a, e, distinctArguments);
        });
      });
      if (needed)
        barrier();
      sinceBarrier.append(accesses.begin(), accesses.end());
    }

    void barrier() {
      gpu::BarrierOp::create(b, loc);
      sinceBarrier.clear();
    }

    /// The element indices that `map` selects for column `column` of the
    /// row.
    SmallVector<Value> indices(OpBuilder &ib, AffineMap map, Value column) {
      SmallVector<Value> at;
      for (AffineExpr e : map.getResults()) {
        if (auto dim = dyn_cast<AffineDimExpr>(e)) {
          unsigned d = dim.getPosition();
          at.push_back(d < row.size() ? row[d] : column);
        } else {
          at.push_back(arith::ConstantIndexOp::create(
              ib, loc, cast<AffineConstantExpr>(e).getValue()));
        }
      }
      return at;
    }

    /// `stretch` is k for column thread + k * blockDim of an unrolled row,
    /// and -1 inside a loop or the guarded last stretch (whose values do not
    /// outlive their region).
    using ColumnBody =
        function_ref<SmallVector<Value>(OpBuilder &, Location, Value column,
                                        int64_t stretch, ValueRange carried)>;

    /// Runs `body` for this thread's columns of a row of `length` (thread,
    /// thread + blockDim, ...), carrying `init` through. A row of known
    /// length of a few blocks' width is unrolled: the loads of all its
    /// columns are then in flight together instead of one loop trip after
    /// the other (the kernels are latency-bound: one block per row).
    SmallVector<Value> forColumns(Value length, ValueRange init,
                                  ColumnBody body) {
      std::optional<int64_t> known = getConstantIntValue(length);
      constexpr int64_t kMaxUnrolled = 8;
      if (!known || llvm::divideCeil(*known, threads) > kMaxUnrolled) {
        auto loop = scf::ForOp::create(
            b, loc, thread, length, step, init,
            [&](OpBuilder &lb, Location l, Value column, ValueRange acc) {
              scf::YieldOp::create(lb, l, body(lb, l, column, -1, acc));
            });
        return SmallVector<Value>(loop.getResults());
      }
      SmallVector<Value> carried(init);
      for (int64_t k = 0; k * threads < *known; ++k) {
        Value column = arith::AddIOp::create(
            b, loc, thread,
            arith::ConstantIndexOp::create(b, loc, k * threads));
        if ((k + 1) * threads <= *known) {
          carried = body(b, loc, column, k, carried);
          continue;
        }
        // The last, partial stretch of the row.
        Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             column, length);
        auto guard = scf::IfOp::create(
            b, loc, inside,
            [&](OpBuilder &tb, Location l) {
              scf::YieldOp::create(tb, l, body(tb, l, column, -1, carried));
            },
            [&](OpBuilder &eb, Location l) {
              scf::YieldOp::create(eb, l, carried);
            });
        carried = SmallVector<Value>(guard.getResults());
      }
      return carried;
    }

    /// A parallel generic, fill or copy: each thread computes its columns.
    void emitElementwise(linalg::LinalgOp op, Value length) {
      SmallVector<Access> accesses;
      for (OpOperand *input : op.getDpsInputOperands()) {
        if (!isa<MemRefType>(input->get().getType()))
          continue;
        AffineMap map = op.getMatchingIndexingMap(input);
        if (rowValues.contains(input->get()) && readsRowValue(map))
          continue;
        accesses.push_back({input->get(), false, map.isIdentity()});
      }
      for (Value init : op.getDpsInits())
        accesses.push_back({init, true, true});
      order(accesses);

      // Inputs read what the registers held before this op; its writes
      // replace that for its outputs and anything they may alias.
      ColumnValues before = columnValues;
      for (Value init : op.getDpsInits())
        forgetAliasesOf(init);
      auto load = [&](OpBuilder &lb, Location l, Value source, AffineMap map,
                      Value column, int64_t stretch) -> Value {
        if (stretch >= 0 && map.isIdentity()) {
          auto held = before.find(source);
          if (held != before.end())
            if (Value value = held->second.lookup(stretch))
              return value;
        }
        if (stretch >= 0 && isReadOnly(source))
          return prologueLoad(source, map, stretch);
        return memref::LoadOp::create(lb, l, source, indices(lb, map, column));
      };

      forColumns(
          length, ValueRange{},
          [&](OpBuilder &lb, Location l, Value column, int64_t stretch,
              ValueRange) -> SmallVector<Value> {
            SmallVector<Value> scalars;
            for (OpOperand *input : op.getDpsInputOperands()) {
              Value source = input->get();
              AffineMap map = op.getMatchingIndexingMap(input);
              if (!isa<MemRefType>(source.getType()))
                scalars.push_back(source);
              else if (Value known = rowValues.lookup(source);
                       known && readsRowValue(map))
                scalars.push_back(known);
              else
                scalars.push_back(load(lb, l, source, map, column, stretch));
            }
            SmallVector<Value> results;
            if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
              Block *body = generic.getBlock();
              IRMapping mapping;
              for (auto [arg, scalar] :
                   llvm::zip(body->getArguments(), scalars))
                mapping.map(arg, scalar);
              for (OpOperand &init : generic.getDpsInitsMutable()) {
                BlockArgument arg = generic.getMatchingBlockArgument(&init);
                if (!arg.use_empty())
                  mapping.map(arg, load(lb, l, init.get(),
                                        generic.getMatchingIndexingMap(&init),
                                        column, stretch));
              }
              for (Operation &nested : body->without_terminator())
                lb.clone(nested, mapping);
              for (Value yielded :
                   cast<linalg::YieldOp>(body->getTerminator()).getValues())
                results.push_back(mapping.lookupOrDefault(yielded));
            } else {
              results.push_back(scalars.front()); // fill, copy
            }
            for (auto [init, value] : llvm::zip(op.getDpsInits(), results)) {
              memref::StoreOp::create(
                  lb, l, value, init,
                  indices(lb, b.getMultiDimIdentityMap(row.size() + 1),
                          column));
              if (stretch >= 0)
                columnValues[init][stretch] = value;
            }
            return {};
          });
      for (Value init : op.getDpsInits()) {
        rowValues.erase(init);
        // A fill of a per-row buffer also leaves its value in registers.
        if (isa<linalg::FillOp>(op) && isPerRow(init))
          rowValues[init] = op.getDpsInputs()[0];
      }
    }

    /// Reductions of rows of the same length: one pass over the row folds
    /// every input, then each warp combines its lanes, the warps' partials
    /// meet in shared memory, and every thread combines those: the row's
    /// results end up in every thread's registers.
    void emitReductions(
        ArrayRef<std::pair<linalg::GenericOp, Operation *>> reductions,
        const DenseMap<Operation *, Value> &rowLengths) {
      SmallVector<Access> accesses;
      for (auto [op, combiner] : reductions) {
        accesses.push_back({op.getDpsInputs()[0], false, true});
        if (!rowValues.contains(op.getDpsInits()[0]))
          accesses.push_back({op.getDpsInits()[0], false, false});
      }
      order(accesses);

      // Each output's initial value, unless it is the neutral element:
      // read before the barrier below, which orders it before the store.
      SmallVector<Value> neutrals, initials;
      for (auto [op, combiner] : reductions) {
        auto type = cast<FloatType>(op.getBlock()->getArgument(0).getType());
        TypedAttr neutral = rnn::neutralElement(combiner, type);
        neutrals.push_back(arith::ConstantOp::create(b, loc, neutral));
        Value out = op.getDpsInits()[0];
        Value initial = rowValues.lookup(out);
        if (!initial) {
          SmallVector<Value> at(row);
          at.push_back(zero);
          initial = memref::LoadOp::create(b, loc, out, at);
        }
        Attribute value;
        if (matchPattern(initial, m_Constant(&value)) && value == neutral)
          initial = nullptr;
        initials.push_back(initial);
      }
      Value length = rowLengths.lookup(reductions.front().first);
      SmallVector<Value> partials = forColumns(
          length, neutrals,
          [&](OpBuilder &lb, Location l, Value column, int64_t stretch,
              ValueRange acc) -> SmallVector<Value> {
            SmallVector<Value> next;
            for (auto [index, reduction] : llvm::enumerate(reductions)) {
              auto [op, combiner] = reduction;
              Value input = op.getDpsInputs()[0];
              Value element;
              if (stretch >= 0) {
                auto held = columnValues.find(input);
                if (held != columnValues.end())
                  element = held->second.lookup(stretch);
              }
              if (!element && stretch >= 0 && isReadOnly(input))
                element = prologueLoad(
                    input, b.getMultiDimIdentityMap(row.size() + 1), stretch);
              if (!element)
                element = memref::LoadOp::create(
                    lb, l, input,
                    indices(lb, b.getMultiDimIdentityMap(row.size() + 1),
                            column));
              next.push_back(rnn::combine(lb, combiner, element, acc[index]));
            }
            return next;
          });

      Value warpSize = arith::ConstantIndexOp::create(b, loc, rnn::kWarpSize);
      Value lane = arith::RemUIOp::create(b, loc, thread, warpSize);
      Value warp = arith::DivUIOp::create(b, loc, thread, warpSize);
      Value warps =
          arith::ConstantIndexOp::create(b, loc, threads / rnn::kWarpSize);
      SmallVector<Value> perWarp;
      for (auto [index, reduction] : llvm::enumerate(reductions))
        perWarp.push_back(
            rnn::combineAcrossWarp(b, loc, reduction.second, partials[index]));
      // Lane 0 of each warp hands its warp's partials on.
      Value firstLane =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
      auto handOn = scf::IfOp::create(b, loc, firstLane, /*withElse=*/false);
      {
        OpBuilder hb = OpBuilder::atBlockBegin(&handOn.getThenRegion().front());
        for (auto [index, partial] : llvm::enumerate(perWarp)) {
          Value slot = arith::AddIOp::create(
              hb, loc,
              arith::ConstantIndexOp::create(
                  hb, loc, (nextSlot + index) * (threads / rnn::kWarpSize)),
              warp);
          memref::StoreOp::create(hb, loc, partial, shared, slot);
        }
      }
      barrier();
      Value threadZero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread, zero);
      for (auto [index, reduction] : llvm::enumerate(reductions)) {
        linalg::GenericOp op = reduction.first;
        Operation *combiner = reduction.second;
        int64_t base = (nextSlot + index) * (threads / rnn::kWarpSize);
        Value total = neutrals[index];
        auto gather = scf::ForOp::create(
            b, loc, zero, warps, arith::ConstantIndexOp::create(b, loc, 1),
            ValueRange{total},
            [&](OpBuilder &lb, Location l, Value w, ValueRange acc) {
              Value slot = arith::AddIOp::create(
                  lb, l, arith::ConstantIndexOp::create(lb, l, base), w);
              Value partial = memref::LoadOp::create(lb, l, shared, slot);
              scf::YieldOp::create(lb, l,
                                   rnn::combine(lb, combiner, partial, acc[0]));
            });
        total = gather.getResult(0);
        if (initials[index])
          total = rnn::combine(b, combiner, total, initials[index]);
        Value out = op.getDpsInits()[0];
        rowValues[out] = total;
        if (escaping.contains(out)) {
          forgetAliasesOf(out);
          auto store =
              scf::IfOp::create(b, loc, threadZero, /*withElse=*/false);
          OpBuilder sb =
              OpBuilder::atBlockBegin(&store.getThenRegion().front());
          SmallVector<Value> at(row);
          at.push_back(zero);
          memref::StoreOp::create(sb, loc, total, out, at);
          sinceBarrier.push_back({out, true, false});
        }
      }
      nextSlot += reductions.size();
    }

    /// Whether nothing the kernel writes may overlap `buffer`.
    bool isReadOnly(Value buffer) {
      return llvm::none_of(written, [&](Value w) {
        return mayAlias(w, buffer, distinctArguments);
      });
    }

    /// The element of read-only `buffer` that `map` selects for this
    /// thread's column of `stretch`, loaded at the start of the kernel
    /// (once), so that the load overlaps the phases and reductions before
    /// its use instead of waiting behind them.
    Value prologueLoad(Value buffer, AffineMap map, int64_t stretch) {
      auto key = std::make_tuple(buffer, map, stretch);
      auto it = prologueLoads.find(key);
      if (it != prologueLoads.end())
        return it->second;
      OpBuilder pb(prologueEnd);
      Value column = arith::AddIOp::create(
          pb, loc, thread,
          arith::ConstantIndexOp::create(pb, loc, stretch * threads));
      Value value =
          memref::LoadOp::create(pb, loc, buffer, indices(pb, map, column));
      prologueLoads[key] = value;
      return value;
    }

    /// Forgets what the registers hold for buffers that a write to
    /// `buffer` may change.
    void forgetAliasesOf(Value buffer) {
      SmallVector<Value> stale;
      for (auto &[held, values] : columnValues)
        if (mayAlias(held, buffer, distinctArguments))
          stale.push_back(held);
      for (Value held : stale)
        columnValues.erase(held);
    }

    gpu::LaunchOp launch;
    const DenseSet<Value> &escaping;
    int64_t threads;
    bool distinctArguments;
    Operation *prologueEnd = nullptr;
    SmallVector<Value> written; // Every buffer a member writes.
    DenseMap<std::tuple<Value, AffineMap, int64_t>, Value> prologueLoads;
    OpBuilder b;
    Location loc = UnknownLoc();
    Value thread, zero, step, shared;
    SmallVector<Value> row;
    /// Per-row buffers whose current value every thread holds.
    DenseMap<Value, Value> rowValues;
    /// For buffers written with identity maps in unrolled stretches: the
    /// value this thread stored for its column of each stretch.
    using ColumnValues = DenseMap<Value, DenseMap<int64_t, Value>>;
    ColumnValues columnValues;
    SmallVector<Access> sinceBarrier;
    int64_t nextSlot = 0;
  };
};

} // namespace
