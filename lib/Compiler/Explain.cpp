//===- Explain.cpp - What a model launches, and why -----------------------===//
//
// The report is read off the optimised IR. The passes leave no marks on the
// ops they create (an attribute would change every printed op); each rewrite
// leaves a shape that only it produces instead, and the report names the
// rewrite by that shape: a matmul over the sequence that feeds a scan's
// input is a hoisted projection, a matmul with `acc` accumulates onto it, a
// state whose final value nobody reads was added by one of the carry passes
// (which one the initial value's computation tells), a weight built from
// parameters at the scan was packed by rnn-concat-gate-matmuls (along N) or
// rnn-concat-summed-matmuls (along K).
//
//===----------------------------------------------------------------------===//

#include "rnn/Compiler/Explain.h"

#include "rnn/Compiler/Compiler.h"
#include "rnn/Conversion/PersistentChoice.h"
#include "rnn/Dialect/RNN/IR/RNNOps.h"
#include "rnn/Dialect/RNN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace rnn {
namespace {

/// `tensor<?x20xf32>` as `?x20xf32`.
std::string shapeOf(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    for (int64_t dim : tensor.getShape()) {
      if (ShapedType::isDynamic(dim))
        os << "?";
      else
        os << dim;
      os << "x";
    }
    os << tensor.getElementType();
  } else {
    os << type;
  }
  return text;
}

std::string describeMatmul(MatmulOp matmul) {
  return "[" + shapeOf(matmul.getLhs().getType()) + "] x [" +
         shapeOf(matmul.getRhs().getType()) + "] -> [" +
         shapeOf(matmul.getType()) + "]";
}

bool isFree(Operation *op) {
  return matchPattern(op, m_Constant()) || isa<func::ReturnOp>(op) ||
         op->hasTrait<OpTrait::IsTerminator>();
}

/// The ops of the function that compute `operands`, down to the function's
/// arguments and the results of applications (another loop's work). With
/// `weights`, the ops that compute a matmul's weight go there instead (they
/// run once per call, not over the sequence).
void collectFunctionSlice(ValueRange operands,
                          llvm::SetVector<Operation *> &slice,
                          llvm::SetVector<Operation *> *weights = nullptr) {
  SmallVector<Value> worklist(operands.begin(), operands.end());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || isa<ScanOp, StepOp>(def) || !slice.insert(def))
      continue;
    if (auto matmul = dyn_cast<MatmulOp>(def); matmul && weights) {
      worklist.push_back(matmul.getLhs());
      if (Value acc = matmul.getAcc())
        worklist.push_back(acc);
      collectFunctionSlice(matmul.getRhs(), *weights);
      continue;
    }
    worklist.append(def->operand_begin(), def->operand_end());
  }
}

struct Application {
  Operation *op;
  CellOp cell;
  ValueRange inputs, init, params, finalStates;
};

std::optional<Application> asApplication(Operation *op, SymbolTable &symbols) {
  if (auto scan = dyn_cast<ScanOp>(op))
    return Application{op,
                       symbols.lookup<CellOp>(scan.getCell()),
                       scan.getInputs(),
                       scan.getInit(),
                       scan.getParams(),
                       scan.getFinalStates()};
  if (auto step = dyn_cast<StepOp>(op))
    return Application{op,
                       symbols.lookup<CellOp>(step.getCell()),
                       step.getInputs(),
                       step.getStates(),
                       step.getParams(),
                       step.getNewStates()};
  return std::nullopt;
}

/// The pass that added a state of `app` whose final value nobody reads, by
/// the computation of its initial value; empty for a state of the cell as
/// written.
StringRef carriedBy(const Application &app, unsigned index) {
  if (!app.finalStates[index].use_empty())
    return {};
  Operation *def = app.init[index].getDefiningOp();
  if (!def)
    return {};
  if (auto cast = dyn_cast<CastOp>(def))
    if (llvm::is_contained(app.init, cast.getInput()))
      return "rnn-carry-cast-states";
  if (isa<MatmulOp>(def))
    return "rnn-carry-recurrent-products";
  return "rnn-carry-state-pointwise";
}

/// The lanes of a layer wavefront's chunk loop (rnn-layer-wavefront), in
/// order; empty for any other op.
SmallVector<scf::ExecuteRegionOp> wavefrontLanes(Operation *op) {
  SmallVector<scf::ExecuteRegionOp> lanes;
  Block *body = nullptr;
  if (auto loop = dyn_cast<scf::ForOp>(op))
    body = loop.getBody();
  else if (auto group = dyn_cast<scf::ExecuteRegionOp>(op);
           group && group.getRegion().hasOneBlock())
    body = &group.getRegion().front();
  if (!body)
    return lanes;
  for (auto lane : body->getOps<scf::ExecuteRegionOp>()) {
    auto calls = lane.getRegion().front().getOps<func::CallOp>();
    if (llvm::any_of(calls, [](func::CallOp call) {
          return call.getCallee() == "rnn_cuda_lane_begin";
        }))
      lanes.push_back(lane);
  }
  return lanes;
}

/// An op of the function as the explanation walks it: top-level ops, and
/// in a wavefront's loop the ops of each layer's chunk (`lane` >= 0).
struct FunctionOp {
  Operation *op;
  int lane;
};

/// Whether `op` only computes sizes: scalar arithmetic, a dimension, an
/// empty sequence (no work on the GPU).
bool isSizeArithmetic(Operation *op) {
  if (isa<tensor::EmptyOp, tensor::DimOp>(op))
    return true;
  return op->getNumResults() > 0 &&
         llvm::all_of(op->getResultTypes(),
                      [](Type type) { return type.isIntOrIndexOrFloat(); });
}

/// Whether `op` does no work on the GPU in a wavefront's lane: its size
/// arithmetic, the chunk's slices, the lane's mark.
bool isBookkeeping(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::InsertSliceOp, func::CallOp>(op) ||
         op->hasTrait<OpTrait::IsTerminator>() || isSizeArithmetic(op);
}

/// The function's ops in order, a wavefront loop's lanes flattened, without
/// the bookkeeping around the chunks.
SmallVector<FunctionOp> functionOps(func::FuncOp func) {
  SmallVector<FunctionOp> ops;
  for (Operation &op : func.getBody().getOps()) {
    SmallVector<scf::ExecuteRegionOp> lanes = wavefrontLanes(&op);
    if (lanes.empty()) {
      if (!isSizeArithmetic(&op))
        ops.push_back({&op, -1});
      continue;
    }
    for (auto [index, lane] : llvm::enumerate(lanes))
      for (Operation &inner : lane.getRegion().front())
        if (!isBookkeeping(&inner))
          ops.push_back({&inner, int(index)});
  }
  return ops;
}

class Explainer {
public:
  Explainer(ModuleOp module, llvm::raw_ostream &os) : symbols(module), os(os) {}

  void explainFunction(func::FuncOp func) {
    os << "function @" << func.getSymName() << "\n";
    SmallVector<Application> applications;
    SmallVector<FunctionOp> ops = functionOps(func);
    for (auto [op, lane] : ops)
      if (std::optional<Application> app = asApplication(op, symbols))
        if (app->cell)
          applications.push_back(*app);

    // What each function-level op is for, from the applications it feeds.
    llvm::DenseMap<Operation *, std::string> roles;
    for (const Application &app : applications) {
      llvm::SetVector<Operation *> inputSlice, initSlice, paramSlice;
      collectFunctionSlice(app.inputs, inputSlice, &paramSlice);
      collectFunctionSlice(app.init, initSlice);
      collectFunctionSlice(app.params, paramSlice);
      llvm::DenseSet<Operation *> feedsMatmul;
      for (Operation *op : llvm::reverse(inputSlice))
        if (isa<MatmulOp>(op) || feedsMatmul.contains(op))
          for (Value operand : op->getOperands())
            if (Operation *def = operand.getDefiningOp())
              feedsMatmul.insert(def);
      for (Operation *op : inputSlice) {
        if (isa<MatmulOp>(op))
          roles.try_emplace(op, "input projection over all T*B rows, hoisted "
                                "by rnn-hoist-input-projection");
        else if (feedsMatmul.contains(op))
          roles.try_emplace(op, "feeds a hoisted input projection "
                                "(rnn-hoist-input-projection)");
        else
          roles.try_emplace(op, "work on the input sequence before the "
                                "loop, as the function computes it");
      }
      for (auto [index, init] : llvm::enumerate(app.init)) {
        StringRef pass = carriedBy(app, index);
        if (pass.empty())
          continue;
        llvm::SetVector<Operation *> slice;
        collectFunctionSlice(init, slice);
        for (Operation *op : slice)
          roles.try_emplace(
              op, ("initial value of a state carried by " + pass).str());
      }
      for (Operation *op : paramSlice)
        roles.try_emplace(op, "weights packed once per call (parameter-only "
                              "ops moved out of the cell)");
    }

    unsigned loops = 0;
    for (Operation &funcOp : func.getBody().getOps()) {
      SmallVector<scf::ExecuteRegionOp> lanes = wavefrontLanes(&funcOp);
      if (!lanes.empty() && isa<scf::ForOp>(funcOp)) {
        auto rule = funcOp.getAttrOfType<StringAttr>(kWavefrontChunkAttr);
        os << "  layer wavefront (rnn-layer-wavefront): " << lanes.size()
           << " layers over chunks of "
           << (rule ? rule.getValue() : StringRef("time steps"))
           << "; layer l runs chunk k while layer l+1 runs chunk k-1, each "
              "layer's chunks on a stream of its own (lane l)\n";
      }
    }
    int lastLane = -1;
    Operation *lastGroup = nullptr;
    for (auto [opPointer, lane] : ops) {
      Operation &op = *opPointer;
      if (isFree(&op))
        continue;
      // A lane's group: the loop over chunks, or scans side by side.
      Operation *group = lane >= 0 ? op.getParentOp()->getParentOp() : nullptr;
      bool sideBySide = group && isa<scf::ExecuteRegionOp>(group);
      if (sideBySide && group != lastGroup)
        os << "  side by side (rnn-layer-wavefront): "
           << wavefrontLanes(group).size()
           << " scans that read nothing of each other, each with its input "
              "projection on a stream of its own\n";
      if (lane >= 0 && (lane != lastLane || group != lastGroup))
        os << "  "
           << (sideBySide ? "lane " + std::to_string(lane) + ":"
                          : "layer " + std::to_string(lane) +
                                "'s chunk (lane " + std::to_string(lane) + "):")
           << "\n";
      lastLane = lane;
      lastGroup = group;
      if (std::optional<Application> app = asApplication(&op, symbols)) {
        if (app->cell) {
          explainLoop(*app);
          ++loops;
          continue;
        }
      }
      StringRef where = lane >= 0    ? (sideBySide ? "before the lane's loop"
                                                   : "before the chunk's loop")
                        : loops == 0 ? "before the loop"
                                     : "after a loop";
      auto role = roles.find(&op);
      std::string why = role != roles.end() ? role->second : "as written";
      if (lane >= 0 && !sideBySide)
        if (size_t at = why.find("all T*B rows"); at != std::string::npos)
          why.replace(at, 12, "the chunk's C*B rows");
      if (auto matmul = dyn_cast<MatmulOp>(&op))
        os << "  " << where << ": GEMM " << describeMatmul(matmul) << ": "
           << why << "\n";
      else if (isa<OuterSumOp>(op))
        // A weight gradient: one GEMM over all T*B rows.
        os << "  " << where << ": GEMM rnn.outer_sum -> ["
           << shapeOf(op.getResult(0).getType())
           << "]: outer products summed over all rows, " << why << "\n";
      else if (auto outer = dyn_cast<HeadwiseOuterSumOp>(op))
        os << "  " << where << ": "
           << describeHeadwiseGemms(
                  outer.getType().getDimSize(0) == 1 ? 0 : outer.getGates())
           << " rnn.headwise_outer_sum -> ["
           << shapeOf(op.getResult(0).getType())
           << "]: outer products summed over all rows, " << why << "\n";
      else if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op))
        os << "  " << where << ": "
           << describeHeadwiseGemms(
                  headwise.getNumHeads() == 1 ? 0 : headwise.getGates())
           << " " << describeHeadwise(headwise) << ": " << why << "\n";
      else if (std::string folded = foldedCast(op); !folded.empty())
        os << "  " << where << ": no kernel for rnn.cast -> ["
           << shapeOf(op.getResult(0).getType()) << "]: " << folded << "\n";
      else
        os << "  " << where << ": kernel " << op.getName() << " -> ["
           << (op.getNumResults() ? shapeOf(op.getResult(0).getType()) : "")
           << "]: " << why << "\n";
    }
  }

  /// Why a cast outside the loops runs as no kernel of its own, or empty:
  /// the GEMM that computes its only input from operands of the cast's type
  /// stores the product rounded (convert-matmul-to-library-gemm), and the
  /// previous states are rounded where they are gathered
  /// (convert-rnn-to-linalg).
  static std::string foldedCast(Operation &op) {
    auto rounding = dyn_cast<CastOp>(op);
    if (!rounding || !rounding.getInput().hasOneUse())
      return "";
    Operation *producer = rounding.getInput().getDefiningOp();
    Type element = rounding.getType().getElementType();
    auto operandsOfType = [&](Value lhs) {
      return cast<RankedTensorType>(lhs.getType()).getElementType() ==
                 element &&
             element.getIntOrFloatBitWidth() == 16;
    };
    if (auto matmul = dyn_cast_or_null<MatmulOp>(producer);
        matmul && !matmul.getAcc() && operandsOfType(matmul.getLhs()))
      return "the GEMM before it stores its product rounded";
    if (auto outer = dyn_cast_or_null<OuterSumOp>(producer);
        outer && operandsOfType(outer.getLhs()))
      return "the GEMM before it stores its product rounded";
    if (isa_and_nonnull<PreviousStatesOp>(producer))
      return "rounded where rnn.previous_states gathers them";
    return "";
  }

private:
  /// A head-wise product's calls: one strided-batched GEMM per gate, the
  /// heads as the batch (`gates` = 0: one head, one dense GEMM).
  static std::string describeHeadwiseGemms(int64_t gates) {
    if (gates == 0)
      return "GEMM (one head: the dense product)";
    return std::to_string(gates) + " batched GEMM" + (gates == 1 ? "" : "s") +
           " (one per gate, the heads as the batch)";
  }

  static std::string describeHeadwise(HeadwiseMatmulOp op) {
    std::string text;
    llvm::raw_string_ostream out(text);
    out << "rnn.headwise_matmul" << (op.getTransposed() ? " transposed" : "")
        << " [" << shapeOf(op.getLhs().getType()) << "] x ["
        << shapeOf(op.getRhs().getType()) << "] -> ["
        << shapeOf(op.getResult().getType()) << "]";
    return text;
  }

  void explainLoop(const Application &app) {
    CellOp cell = app.cell;
    unsigned gemms = 0, kernels = 0;
    for (Operation &op : cell.getBodyBlock()) {
      if (isFree(&op))
        continue;
      if (isa<MatmulOp>(op))
        ++gemms;
      else if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op))
        gemms += headwise.getNumHeads() == 1 ? 1 : headwise.getGates();
      else
        ++kernels;
    }
    bool isScan = isa<ScanOp>(app.op);
    os << "  " << (isScan ? "scan" : "step") << " @" << cell.getSymName();
    if (auto scan = dyn_cast<ScanOp>(app.op)) {
      if (scan.getReverse())
        os << " reverse";
      if (scan.getLengths())
        os << " with lengths";
    }
    os << ", " << (isScan ? "per step" : "once") << ": " << gemms << " GEMM"
       << (gemms == 1 ? "" : "s") << ", " << kernels << " kernel"
       << (kernels == 1 ? "" : "s") << "\n";

    for (unsigned index = 0; index < app.init.size(); ++index) {
      StringRef pass = carriedBy(app, index);
      if (!pass.empty())
        os << "    carries state " << index << " ["
           << shapeOf(app.init[index].getType()) << "], added by " << pass
           << "\n";
    }
    for (Operation &op : cell.getBodyBlock()) {
      if (isFree(&op))
        continue;
      if (auto matmul = dyn_cast<MatmulOp>(op)) {
        os << "    GEMM " << describeMatmul(matmul);
        explainMatmul(app, matmul);
        os << "\n";
      } else if (auto headwise = dyn_cast<HeadwiseMatmulOp>(op)) {
        os << "    "
           << describeHeadwiseGemms(
                  headwise.getNumHeads() == 1 ? 0 : headwise.getGates())
           << " " << describeHeadwise(headwise) << "\n";
      } else if (auto group = dyn_cast<PointwiseOp>(op)) {
        unsigned ops = 0;
        group.getBody().walk([&](Operation *inner) {
          if (!isFree(inner))
            ++ops;
        });
        os << "    kernel: fused group of " << ops << " scalar ops -> "
           << group->getNumResults() << " result"
           << (group->getNumResults() == 1 ? "" : "s")
           << ", by rnn-fuse-pointwise\n";
      } else {
        os << "    kernel " << op.getName() << " -> ["
           << (op.getNumResults() ? shapeOf(op.getResult(0).getType()) : "")
           << "]: "
           << (isa<SplitOp>(op)
                   ? "columns of its operand, read in place; a copy "
                     "where an output or a state needs its own buffer"
                   : "not fused, a kernel of its own")
           << "\n";
      }
    }
  }

  void explainMatmul(const Application &app, MatmulOp matmul) {
    CellOp cell = app.cell;
    SmallVector<std::string> notes;
    auto lhs = dyn_cast<BlockArgument>(matmul.getLhs());
    if (lhs && !cell.isInputIndex(lhs.getArgNumber()) &&
        !cell.isParamIndex(lhs.getArgNumber())) {
      unsigned index = lhs.getArgNumber() - cell.getNumInputs();
      StringRef pass = carriedBy(app, index);
      notes.push_back(pass.empty()
                          ? std::string("recurrent product of a state")
                          : ("reads a state carried by " + pass).str());
    } else if (isa_and_nonnull<PointwiseOp>(matmul.getLhs().getDefiningOp())) {
      notes.push_back("reads the previous group's result: a dependent stage");
    }
    if (matmul.getAcc())
      notes.push_back("accumulates onto a hoisted input row "
                      "(rnn-accumulate-into-projection)");
    if (auto rhs = dyn_cast<BlockArgument>(matmul.getRhs());
        rhs && cell.isParamIndex(rhs.getArgNumber())) {
      unsigned index =
          rhs.getArgNumber() - cell.getNumInputs() - cell.getNumStates();
      Operation *def = app.params[index].getDefiningOp();
      if (auto concat = dyn_cast_or_null<ConcatOp>(def)) {
        // Along K (the weight's `in` axis) the products of one sum were
        // merged; along N, the gates of one operand.
        int64_t kAxis = matmul.getWeightInOut() ? 0 : 1;
        auto describe = [&](ConcatOp packed) {
          return packed.getConcatAxis() == kAxis
                     ? " matmuls of one sum concatenated along K by "
                       "rnn-concat-summed-matmuls"
                     : " matmuls concatenated by rnn-concat-gate-matmuls";
        };
        notes.push_back("weights of " +
                        std::to_string(concat->getNumOperands()) +
                        describe(concat));
        for (Value piece : concat.getInputs())
          if (auto inner = piece.getDefiningOp<ConcatOp>();
              inner && inner.getConcatAxis() != concat.getConcatAxis()) {
            notes.push_back("each of " +
                            std::to_string(inner->getNumOperands()) +
                            describe(inner));
            break;
          }
      } else if (isa_and_nonnull<MatmulOp>(def))
        notes.push_back("weight product of rnn-carry-recurrent-products");
    }
    for (auto [i, note] : llvm::enumerate(notes))
      os << (i == 0 ? ": " : "; ") << note;
  }

  SymbolTable symbols;
  llvm::raw_ostream &os;
};

} // namespace

std::string explainModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  Explainer explainer(module, os);
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      explainer.explainFunction(func);
  return text;
}

std::string explainPersistentKernels(ModuleOp module, llvm::StringRef chip,
                                     bool persistentKernels,
                                     bool deviceLibrary) {
  if (!persistentKernels)
    return "persistent kernels: off (--persistent-kernels=false): every time "
           "loop runs step by step\n";
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  PassManager pm(module.getContext());
  if (failed(parsePassPipeline(bufferizationPipeline(), pm)) ||
      failed(pm.run(*copy)))
    return "persistent kernels: not known (the module does not bufferize)\n";
  return describePersistentChoices(
      *copy, maxDynamicSharedBytes(chip), maxBlockKernelCluster(chip),
      deviceLibrary && runsPersistentKernels(chip));
}

} // namespace rnn
