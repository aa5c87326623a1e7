//===- Passes.td - Rewrite passes of the rnn dialect -------*- tablegen -*-===//

#ifndef RNN_DIALECT_RNN_TRANSFORMS_PASSES_TD
#define RNN_DIALECT_RNN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConcatGateMatmuls : Pass<"rnn-concat-gate-matmuls", "::mlir::ModuleOp"> {
  let summary = "Merges a cell's matmuls that share a left operand into one";
  let description = [{
    In every cell, matmuls with the same left operand, weight layout,
    `allow_tf32` and result element type become one matmul over the
    concatenated weights, followed by an `rnn.split` of its result (a GRU's
    three gate matmuls `h·U_rᵀ`, `h·U_zᵀ`, `h·U_nᵀ` become `h·[U_r; U_z; U_n]ᵀ`).

    The weights are packed outside the time loop: first every computation in
    a cell that depends on parameters alone (a concatenation, a split of a
    weight) moves to each application site (`rnn.scan`, `rnn.step`) and
    enters the cell as a new parameter; the cell's signature and all its
    applications change together. A cell whose symbol has users other than
    `rnn.scan` and `rnn.step` is left alone.

    Matmuls whose left operands differ stay separate, so dependent stages
    (GRU reset-before's `U_n·(r⊙h)`, MGU, mLSTM) are never merged.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numMatmulsMerged", "matmuls-merged",
              "Matmuls replaced by a concatenated one">,
    Statistic<"numConcatenatedMatmuls", "concatenated-matmuls",
              "Concatenated matmuls created">,
    Statistic<"numWeightOpsPacked", "weight-ops-packed",
              "Parameter-only ops moved out of cells">
  ];
}

def ConcatSummedMatmuls
    : Pass<"rnn-concat-summed-matmuls", "::mlir::ModuleOp"> {
  let summary = "Merges matmuls with different left operands that feed one "
                "sum into one matmul over the operands concatenated along K";
  let description = [{
    Runs before `rnn-concat-gate-matmuls`. In a tree of single-use `rnn.add`
    ops, the terms that are `[B, N]` products of a value depending on a
    state with a parameter (`h·Uᵀ`, `c·Vᵀ`, `a·R_aᵀ` for a gate `a` of the
    same step), read by the sum alone, become one product:
    `h·Uᵀ + c·Vᵀ + rest` is `[h, c]·[U, V]ᵀ + rest`. A step then launches
    one GEMM where it launched one per operand; the concatenation of the
    left operands is pointwise work that the fusion writes where its pieces
    are computed (a concatenation of states is carried by
    `rnn-carry-state-pointwise`), and the weights are packed once per call.

    Products merge when they agree on the result type, the row count, the
    operand element types, the weight layout and `allow_tf32`, and run at
    the same point of a step: their left operands come after the same
    number of dependent matmuls. A product of a value ready at the start of
    the step is not moved into a later stage. Products of the input alone
    (hoisted by `rnn-hoist-input-projection`), products that accumulate and
    products read elsewhere stay. Sums that read the same operands share
    one concatenation, so that `rnn-concat-gate-matmuls` merges their
    products along N (an LSTM whose gates read h and c through matrices of
    their own runs one GEMM per step). The terms of a rewritten sum are
    reassociated.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numMatmulsMerged", "matmuls-merged",
              "Products merged into a product over concatenated operands">
  ];
}

def HoistInputProjection : Pass<"rnn-hoist-input-projection", "::mlir::ModuleOp"> {
  let summary = "Moves matmuls of the step input out of the time loop";
  let description = [{
    Every matmul in a cell whose left operand depends on the per-step inputs
    alone (never on a state) and whose weight is a parameter moves out of the
    cell: at each `rnn.scan` it becomes one matmul over the whole input
    sequence, `[T, B, K] x [N, K] -> [T, B, N]` (all `T·B` rows at once), and
    the cell receives the projected slice `[B, N]` as a new per-step input.
    At an `rnn.step` the same matmul runs on the step's input. Inputs that
    the cell no longer reads are dropped from the cell and its applications.

    Anything that depends on a state stays in the cell. Bias additions stay
    too: they cost nothing inside the fused pointwise group that follows.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numHoisted", "matmuls-hoisted",
              "Input projections moved out of cells">
  ];
}

def AccumulateIntoProjection
    : Pass<"rnn-accumulate-into-projection", "::mlir::ModuleOp"> {
  let summary = "Makes the recurrent matmul accumulate onto the projected input";
  let description = [{
    Runs after `rnn-hoist-input-projection`. In a sum of `rnn.add` ops (a
    tree of single-use adds) where one term is an f32/f64 `[B, N]` matmul
    result and another a cell input of the same type that nothing else
    reads (the projected input row), the matmul becomes
    `rnn.matmul ... acc %input` (one GEMM that adds onto the input) and the
    sum keeps its other terms, added onto the matmul's result first. The
    scan lowering then lets the GEMM write into the projection buffer in
    place, so a step is one accumulating GEMM and the fused kernel reads the
    finished pre-activations: one `[B, N]` read and one buffer less per step.
    Sums with a term in between (the GRU's `r * (U_n h)`) keep their
    matmul. The addition is reassociated: `(x + b_W) + (u + b_U)` becomes
    `((u + x) + b_W) + b_U`.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numAccumulating", "matmuls-accumulating",
              "Matmuls made to accumulate onto a projected input">
  ];
}

def CarryCastStates : Pass<"rnn-carry-cast-states", "::mlir::ModuleOp"> {
  let summary = "Carries a state that is read through a cast in the cast type too";
  let description = [{
    A state that the cell casts with `rnn.cast`, always to one type (the f32
    h of a bf16 LSTM or GRU, cast for its bf16 recurrent matmul), gets a
    companion state of that type: the cell reads the companion instead of
    casting (other reads, such as a GRU's `z⊙h`, keep reading the state),
    and yields the cast of the state's new value as the companion's next
    value. Every application passes the cast of the initial state as the
    companion's initial value and gets one more final state, which nothing
    reads. The original state stays (its final value is a result). The
    cast then runs where the new state is computed, inside that step's
    fused kernel, instead of as a kernel of its own at the start of the next
    step. Values are unchanged.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numCarried", "states-carried",
              "States carried in their cast type">
  ];
}

def NarrowScanOutputs : Pass<"rnn-narrow-scan-outputs", "::mlir::ModuleOp"> {
  let summary = "Yields a cell output that is only read through a cast in the "
                "cast type";
  let description = [{
    Where every reader of an output of a cell, in every rnn.scan and
    rnn.step that applies it, is an `rnn.cast` to one narrower type (the
    f32 gate gradients of a bf16 model's backward, which the GEMMs of its
    input and weight gradients read in bf16), the cell yields the cast
    instead and the applications' output has that type: the cast runs in
    the step's fused kernel instead of as a kernel over the whole sequence
    after the loop, and the sequence is stored narrow. Values are
    unchanged. A cell whose symbol has users other than `rnn.scan` and
    `rnn.step`, an output with no readers, and a cast to a wider type are
    left alone. Run it before `rnn-fuse-pointwise`.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numNarrowed", "outputs-narrowed",
              "Cell outputs yielded in the type they are read in">
  ];
}

def CarryStatePointwise
    : Pass<"rnn-carry-state-pointwise", "::mlir::ModuleOp"> {
  let summary = "Carries a pointwise function of the states that a matmul "
                "reads as a state of its own";
  let description = [{
    A matmul that reads a pointwise function of the states alone
    (`tanh(h)·Uᵀ`, `(h⊙c)·Uᵀ`: states, parameters and constants in, no
    input) would start every step with a kernel of its own for that
    function, since nothing else of the step is ready before the matmul.
    The cell instead carries the function's value as a new state: the
    matmul (and every other reader) reads it, the cell yields the same
    function of the new states as its next value, so that it joins the
    fused group that computes them, and each application passes the
    function of the initial states as its initial value and gets one more
    final state, which nothing reads. Values are unchanged; a masked step
    passes all states through, the carried one with them.

    Applies when every state that the function reads gets its next value
    from an op that a fused group can take (not a matmul, not a block
    argument). Run it after `rnn-carry-cast-states` (a cast of a state
    alone is theirs) and before `rnn-fuse-pointwise`. A cell whose symbol
    has users other than `rnn.scan` and `rnn.step` is left alone.
  }];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numCarried", "values-carried",
              "Pointwise functions of the states carried as states">
  ];
}

def CarryRecurrentProducts
    : Pass<"rnn-carry-recurrent-products", "::mlir::ModuleOp"> {
  let summary = "Carries U·s instead of a state s that is a projection "
                "read only through matmuls";
  let description = [{
    In an LSTM with a projection (PyTorch's `proj_size`), the state is
    `r = m·W_hrᵀ` (`m = o⊙tanh(c)`, `[B, H]`, `r` `[B, P]`) and the next step
    reads it only through `r·Uᵀ`: two dependent matmuls on every step's
    critical path. Since `r·Uᵀ = m·(U·W_hr)ᵀ`, the cell can carry `q = r·Uᵀ`
    as a state of its own and compute its next value from `m` with the
    product `U·W_hr` (`[N, H]`, computed once per call from the parameters;
    with `allow_tf32` only if both matmuls it stands for have it). Then both `m·W_hrᵀ` (the output and final state) and
    `m·(U·W_hr)ᵀ` read `m`, so `rnn-concat-gate-matmuls` merges them: one
    GEMM per step instead of two in a row.

    Applies to a state whose every use is `s·Uᵀ` (a parameter in the
    default `[out, in]` layout, no `acc`) and whose next value is `m·W` (a
    parameter `W` in either layout), all in f32 or f64, when the product
    costs at most `max-cost-ratio` times the matmul it replaces
    (`H·N <= ratio·P·N`, i.e. `H <= ratio·P`): the carried product trades
    work for one GEMM launch and its wait, which pays off while the step is
    latency-bound. Each application passes `s₀·Uᵀ` as the new state's
    initial value and gets one more final state, which nothing reads; `s`
    itself stays a state (its final value is a result). Values change only
    by rounding (the product is reassociated).
  }];
  let options = [
    Option<"maxCostRatio", "max-cost-ratio", "double", "2.0",
           "Largest H / P for which the product replaces the projected state">
  ];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numCarried", "products-carried",
              "Recurrent products carried as states">
  ];
}

def ReduceMatmulPrecision
    : Pass<"rnn-reduce-matmul-precision", "::mlir::ModuleOp"> {
  let summary = "Runs f32 matmuls on bf16 or f16 operands, accumulating in f32";
  let description = [{
    Mixed precision for a model written in f32: every `rnn.matmul` and
    `rnn.headwise_matmul` whose operands are f32 reads them cast to
    `element-type` (`bf16` or `f16`),
    and still produces (and accumulates in) f32; `allow_tf32` is dropped, as
    it only concerns f32 operands. States, outputs and all pointwise math
    stay f32. Run before `rnn-optimize`, which then casts the weights once
    per call outside the loop (parameter-only), the input sequence with the
    hoisted projection, and a state where it is computed
    (`rnn-carry-cast-states`). `rnn-compile --matmul-type=bf16` runs it.
    `element-type=tf32` instead keeps the f32 operands and sets `allow_tf32`
    on every f32 matmul (TF32 tensor-core products on CUDA, as PyTorch lets
    cuDNN's recurrences do by default; the CPU backend computes in f32).
  }];
  let options = [
    Option<"elementType", "element-type", "std::string", "\"bf16\"",
           "Operand type of the matmuls: bf16 or f16 (or tf32: f32 operands, "
           "TF32 products)">
  ];
  let dependentDialects = ["::rnn::RNNDialect"];
  let statistics = [
    Statistic<"numReduced", "matmuls-reduced",
              "Matmuls now reading reduced-precision operands (or TF32)">
  ];
}

def Differentiate : Pass<"rnn-differentiate", "::mlir::ModuleOp"> {
  let summary = "Derives a training forward and a backward for every public function";
  let description = [{
    Reverse-mode differentiation in the dialect. For every public function
    `@f(args) -> (results)` (or those named by `functions`) it adds

    * `@f_train(args) -> (results, saved)`: `f`'s results, then what the
      backward needs (per scan: output sequences it reads and the per-step
      values the policy saves);
    * `@f_backward(args, saved, dresults) -> (dargs)`: one gradient per
      floating-point argument of `f`, given one per result.

    Each cell `@c` that a scan applies gets a training twin `@c_train`
    (the same step, also emitting the state it started from and the saved
    values) and an adjoint cell `@c_adjoint`, scanned in the opposite
    direction over the same lengths: per-step inputs the result gradients,
    the forward's inputs, previous states and saved values; carried states
    the state gradients; per-step outputs what the weight and input
    gradients need. Those gradients sum over time, so they leave the loop:
    a weight gradient is one `rnn.outer_sum` over all `T·B` rows, a bias or
    peephole gradient one `rnn.sum_to`, and the input gradient of a matmul
    one matmul over the whole sequence. Masked steps (past a row's length)
    pass the state gradients through and give no gradient.

    The adjoint rules follow PyTorch's conventions for subgradients: `relu`
    has derivative 0 at 0, `max`/`min` split a tie evenly, `reduce_max`
    spreads its gradient evenly over the tied maxima. Run it before
    `rnn-fuse-pointwise` (the adjoint of a fused group is built from its
    ops, and the adjoint cell is fused by the same pass): a function that
    holds an `rnn.pointwise`, or any op without an adjoint rule, gets a
    diagnostic naming the op.

    In a backward, a gradient that products read only rounded to 16 bits
    (the gate gradients of a bf16 model, read by the GEMMs of its input and
    weight gradients) and that an f32 `rnn.sum_to` reads (its bias
    gradient) is summed rounded too, in f32, as PyTorch's autocast sums a
    Linear's bias gradient from the 16-bit gradient its GEMMs read: the bias
    is a weight whose input is 1. Then nothing reads the f32 gradient but
    casts, and `rnn-narrow-scan-outputs` stores it in 16 bits.

    `save=gates` (the default) saves, per step, the sum that every matmul
    feeds (the LSTM's pre-activation gates), so the backward runs no matmul
    of the forward again; `save=states` saves only the states and recomputes
    the rest (the recomputed matmuls read saved sequences, so
    `rnn-hoist-input-projection` runs them over all steps at once).
  }];
  let options = [
    Option<"save", "save", "std::string", "\"gates\"",
           "What the training forward saves per step: gates or states">,
    ListOption<"functions", "functions", "std::string",
               "The public functions to differentiate (default: all)">
  ];
  let dependentDialects = ["::rnn::RNNDialect", "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numFunctions", "functions", "Functions differentiated">,
    Statistic<"numAdjointCells", "adjoint-cells", "Adjoint cells built">
  ];
}

def FusePointwise : Pass<"rnn-fuse-pointwise", "::mlir::ModuleOp"> {
  let summary = "Fuses each stage of a cell's pointwise ops into one rnn.pointwise";
  let description = [{
    Groups the pointwise ops of every cell (arithmetic, activations, casts,
    constants, gate splits, row reductions and layer normalisation) into one
    `rnn.pointwise` per stage between dependent matmuls: a group never
    contains two ops with a matmul between them, so the peephole output gate
    that reads the new cell state stays in the group that computes it, and a
    GRU reset-before or an LSTMP keeps its matmul between two groups.

    Gate splits become index arithmetic: a split of a matmul result (or of
    any value computed outside the group) becomes reads at column offsets,
    and a split of a value computed inside the group is pushed through the
    pointwise ops that produce it, so no gate is ever copied. Layer
    normalisation becomes `rnn.row_sum` reductions inside the scalar body.

    Gate concatenations become index arithmetic too: a last-axis concat of
    whole pieces of the iteration width joins the pieces of its operands,
    and a value used outside the group that is `k` times as wide as the
    iteration space is a result of `k` pieces, each written into its
    columns (a backward step's `[B, 4H]` gate gradients, written where the
    next matmul reads them, without a copy).

    Ops the group cannot express (a concatenation along another axis or of
    operands that are no whole pieces, a row statistic used outside its
    group) stay as they are.
  }];
  let dependentDialects = ["::rnn::RNNDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
  let statistics = [
    Statistic<"numGroups", "groups", "rnn.pointwise ops created">,
    Statistic<"numOpsFused", "ops-fused", "Ops moved into rnn.pointwise">
  ];
}

def LayerWavefront : Pass<"rnn-layer-wavefront", "::mlir::ModuleOp"> {
  let summary = "Runs a stack of scans as a wavefront over chunks of time steps";
  let description = [{
    A chain of up to 16 scans that run the same way (forward, or all
    reverse: a stack's derived backward, from the last chunk back), each
    reading what the one before it outputs (a stack of layers, after
    `rnn-optimize`: layer l+1's input projection over layer l's output
    sequence between them; sequences computed before the chain by no scan,
    such as a residual input or a backward's saved gates, are sliced too),
    becomes one loop over chunks of C time steps. Each iteration runs every layer's scan on its
    chunk, from the chunk's rows of the layer's input (and of the ops that
    link the layers, such as the hoisted input projection, on those rows
    alone) and the states the layer's previous chunk left, and writes the
    chunk's rows of every output sequence in place.

    Each layer's chunk is an `scf.execute_region` (`no_inline`) that
    starts with `func.call @rnn_cuda_lane_begin(l, l - 1)`: a lane, which
    may run on a stream of its own that waits for lane l - 1's chunk only,
    so that layer l runs chunk k while layer l + 1 runs chunk k - 1
    (`convert-lanes-to-runtime-calls`).

    `chunk-steps` = 0 takes C = ceil(sqrt(3 T)) at run time: layer l
    starts l·C steps after layer 0, and each chunk costs each layer a fixed
    time (its projection's launch, the switch of streams) that larger
    chunks spread over more steps. With `chunk-steps` = 0,
    `persistent-min-steps` = M > 0 and `persistent-max-batch` > 0, a chain
    whose cells' products all read bf16 or f16 rows and whose states are
    [B, H] with H from `persistent-min-hidden` to `persistent-max-hidden`
    (0: no bound) takes chunks of at least M steps where B is at most
    `persistent-max-batch` and T is at least 2 M: the CUDA backend runs a
    lane's recurrence of those sizes as a grid-wide persistent kernel only
    over M steps or more (a last, shorter chunk runs its step loop), with
    one copy of its blocks (one batch tile) a lane. `rnn-compile` sets the
    four for sm_90 from the constants of
    `rnn/DeviceLibrary/PersistentRecurrence.h`. On the H100 the 8-layer
    bf16 stacks at T = 200, B = 32, H = 512 took 1.4x to 1.5x less time in
    chunks of 32 than of 25.

    Then scans that read nothing of each other, consecutive among a
    block's scans (the forward and reverse scans of a bidirectional
    layer), run side by side: an `scf.execute_region` holds one lane per
    scan, with the row-wise ops that compute its inputs (its input
    projection), each waiting for no other lane; what else they read moves
    before the group. Scans with sequence lengths, scans of mixed
    directions and links that are not row-wise ops over the sequence
    (`rnn.matmul`, element-wise ops, casts) or that read a final state are
    not chunked.
  }];
  let options = [
    Option<"chunkSteps", "chunk-steps", "int64_t", "0",
           "Time steps a chunk (0: ceil(sqrt(3 T)) at run time)">,
    Option<"persistentMinSteps", "persistent-min-steps", "int64_t", "0",
           "With chunk-steps = 0: the fewest time steps a chunk of a 16-bit "
           "chain takes at run time where the batch fits "
           "`persistent-max-batch` and T is at least twice as many (0: no "
           "minimum)">,
    Option<"persistentMaxBatch", "persistent-max-batch", "int64_t", "0",
           "The most batch rows for which `persistent-min-steps` applies "
           "(0: none)">,
    Option<"persistentMinHidden", "persistent-min-hidden", "int64_t", "0",
           "The smallest state width H for which `persistent-min-steps` "
           "applies">,
    Option<"persistentMaxHidden", "persistent-max-hidden", "int64_t", "0",
           "The largest state width H for which `persistent-min-steps` "
           "applies (0: no bound)">
  ];
  let dependentDialects = ["::rnn::RNNDialect", "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numChains", "chains", "Chains of scans made wavefronts">,
    Statistic<"numLayers", "layers", "Scans in those chains">,
    Statistic<"numSideBySide", "side-by-side",
              "Groups of independent scans put side by side">
  ];
}

#endif // RNN_DIALECT_RNN_TRANSFORMS_PASSES_TD
