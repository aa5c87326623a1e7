//===- RNNOps.td - Operations of the rnn dialect -----------*- tablegen -*-===//

#ifndef RNN_DIALECT_RNN_IR_RNNOPS_TD
#define RNN_DIALECT_RNN_IR_RNNOPS_TD

include "rnn/Dialect/RNN/IR/RNNDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Cells and their application
//===----------------------------------------------------------------------===//

def RNN_CellOp : RNN_Op<"cell", [
    Symbol, IsolatedFromAbove, SingleBlock]> {
  let summary = "One time step of a recurrent cell, defined once as a symbol";
  let description = [{
    A cell maps per-step inputs, carried states and parameters to step
    outputs and new states. It is a symbol (like `func.func`), isolated from
    above, with value semantics on tensors. Inputs and states are `[B, N]`
    tensors sharing one batch dimension `B` (static or `?`) with static
    feature sizes; parameters are statically shaped tensors of any rank.

    The block arguments are the inputs, then the states, then the parameters.
    The body ends with `rnn.yield`, which names the step outputs and the new
    states; a new state has exactly the type of the state it replaces. The
    type after `->` lists the step outputs.

    Example (a tanh RNN, weights in PyTorch's `[out, in]` layout):

    ```mlir
    rnn.cell @elman inputs(%x: tensor<?x16xf32>) states(%h: tensor<?x32xf32>)
        params(%W: tensor<32x16xf32>, %U: tensor<32x32xf32>, %b: tensor<32xf32>)
        -> (tensor<?x32xf32>) {
      %wx = rnn.matmul %x, %W : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
      %uh = rnn.matmul %h, %U : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
      %s = rnn.add %wx, %uh : tensor<?x32xf32>, tensor<?x32xf32>
      %sb = rnn.add %s, %b : tensor<?x32xf32>, tensor<32xf32>
      %hn = rnn.tanh %sb : tensor<?x32xf32>
      rnn.yield outputs(%hn : tensor<?x32xf32>) states(%hn : tensor<?x32xf32>)
    }
    ```
  }];

  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       I64Attr:$num_inputs,
                       I64Attr:$num_states);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name,
                   "::mlir::TypeRange":$inputs,
                   "::mlir::TypeRange":$states,
                   "::mlir::TypeRange":$params,
                   "::mlir::TypeRange":$outputs)>
  ];

  let extraClassDeclaration = [{
    /// Number of parameters (block arguments after inputs and states).
    int64_t getNumParams() {
      return getFunctionType().getNumInputs() - getNumInputs() - getNumStates();
    }
    /// Number of step outputs (yielded before the new states).
    int64_t getNumOutputs() {
      return getFunctionType().getNumResults() - getNumStates();
    }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }

    /// Types of the inputs, states, parameters and step outputs.
    ::llvm::ArrayRef<::mlir::Type> getInputTypes() {
      return getFunctionType().getInputs().take_front(getNumInputs());
    }
    ::llvm::ArrayRef<::mlir::Type> getStateTypes() {
      return getFunctionType().getInputs().slice(getNumInputs(), getNumStates());
    }
    ::llvm::ArrayRef<::mlir::Type> getParamTypes() {
      return getFunctionType().getInputs().drop_front(getNumInputs() +
                                                      getNumStates());
    }
    ::llvm::ArrayRef<::mlir::Type> getOutputTypes() {
      return getFunctionType().getResults().take_front(getNumOutputs());
    }

    /// Block arguments by role.
    ::mlir::Block::BlockArgListType getInputArgs() {
      return getBodyBlock().getArguments().take_front(getNumInputs());
    }
    ::mlir::Block::BlockArgListType getStateArgs() {
      return getBodyBlock().getArguments().slice(getNumInputs(), getNumStates());
    }
    ::mlir::Block::BlockArgListType getParamArgs() {
      return getBodyBlock().getArguments().drop_front(getNumInputs() +
                                                      getNumStates());
    }

    /// The terminator.
    YieldOp getYield();

    /// The role of the block argument at `index`.
    bool isInputIndex(uint64_t index) { return index < getNumInputs(); }
    bool isParamIndex(uint64_t index) {
      return index >= getNumInputs() + getNumStates();
    }
  }];
}

def RNN_YieldOp : RNN_Op<"yield", [
    Pure, HasParent<"CellOp">, Terminator, AttrSizedOperandSegments]> {
  let summary = "Ends a cell: the step outputs and the new states";
  let description = [{
    The terminator of `rnn.cell`. `outputs` are the values the step emits
    (a scan stacks them into output sequences); `states` are the carried
    states for the next step, one per state argument of the cell and of the
    same type.

    ```mlir
    rnn.yield outputs(%h : tensor<?x32xf32>) states(%h, %c : tensor<?x32xf32>, tensor<?x32xf32>)
    ```
  }];
  let arguments = (ins Variadic<RNN_FloatTensor>:$outputs,
                       Variadic<RNN_FloatTensor>:$states);
  let assemblyFormat = [{
    (`outputs` `(` $outputs^ `:` type($outputs) `)`)?
    `states` `(` $states `:` type($states) `)` attr-dict
  }];
  let builders = [OpBuilder<(ins), [{
    $_state.addAttribute(getOperandSegmentSizesAttrName($_state.name),
                         $_builder.getDenseI32ArrayAttr({0, 0}));
  }]>];
  let hasVerifier = 1;
}

def RNN_ScanOp : RNN_Op<"scan", [
    AttrSizedOperandSegments, AttrSizedResultSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Applies a cell over sequences";
  let description = [{
    Runs the cell `@cell` over the time axis of its input sequences. Each
    sequence input is `[T, B, I]`, sliced at each step into the cell's `[B, I]`
    input; `init` gives the initial states and `params` the cell's
    parameters. The results are one output sequence `[T, B, N]` per step
    output of the cell, then the final states.

    `reverse` runs the steps from `T - 1` down to `0` (outputs stay at the
    position of the step that produced them). The optional `lengths` (`[B]`,
    `i32` or `i64`) give each sequence's valid length: at positions
    `t >= lengths[b]` row `b`'s state is left unchanged and its outputs are
    zero, and a reverse scan starts row `b` at `lengths[b] - 1` (PyTorch's
    packed-sequence semantics). Without `lengths` every row runs all `T`
    steps.

    A multi-layer network is a chain of scans; a bidirectional one is a
    forward and a `reverse` scan whose output sequences are concatenated on
    the feature axis.

    ```mlir
    %ys, %hT, %cT = rnn.scan @lstm inputs(%xs : tensor<10x?x16xf32>)
        init(%h0, %c0 : tensor<?x32xf32>, tensor<?x32xf32>)
        params(%W, %U, %b : tensor<128x16xf32>, tensor<128x32xf32>, tensor<128xf32>)
        -> outputs(tensor<10x?x32xf32>) states(tensor<?x32xf32>, tensor<?x32xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$cell,
                       Variadic<RNN_FloatTensor>:$inputs,
                       Variadic<RNN_FloatTensor>:$init,
                       Variadic<RNN_FloatTensor>:$params,
                       Optional<RNN_LengthsTensor>:$lengths,
                       UnitAttr:$reverse);
  let results = (outs Variadic<RNN_FloatTensor>:$outputs,
                      Variadic<RNN_FloatTensor>:$final_states);
  let assemblyFormat = [{
    $cell (`reverse` $reverse^)?
    `inputs` `(` $inputs `:` type($inputs) `)`
    `init` `(` $init `:` type($init) `)`
    (`params` `(` $params^ `:` type($params) `)`)?
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    attr-dict
    `->` (`outputs` `(` type($outputs)^ `)`)? `states` `(` type($final_states) `)`
  }];
  let hasVerifier = 1;
}

def RNN_StepOp : RNN_Op<"step", [
    AttrSizedOperandSegments, AttrSizedResultSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Applies a cell for one time step";
  let description = [{
    One application of `@cell`: inputs `[B, I]`, current states and
    parameters in; the step outputs and the new states out, with the types
    the cell declares (a dynamic batch in the cell may be bound to a static
    one here).

    ```mlir
    %y, %h1, %c1 = rnn.step @lstm inputs(%x : tensor<4x16xf32>)
        states(%h, %c : tensor<4x32xf32>, tensor<4x32xf32>)
        params(%W, %U, %b : tensor<128x16xf32>, tensor<128x32xf32>, tensor<128xf32>)
        -> outputs(tensor<4x32xf32>) states(tensor<4x32xf32>, tensor<4x32xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$cell,
                       Variadic<RNN_FloatTensor>:$inputs,
                       Variadic<RNN_FloatTensor>:$states,
                       Variadic<RNN_FloatTensor>:$params);
  let results = (outs Variadic<RNN_FloatTensor>:$outputs,
                      Variadic<RNN_FloatTensor>:$new_states);
  let assemblyFormat = [{
    $cell
    `inputs` `(` $inputs `:` type($inputs) `)`
    `states` `(` $states `:` type($states) `)`
    (`params` `(` $params^ `:` type($params) `)`)?
    attr-dict
    `->` (`outputs` `(` type($outputs)^ `)`)? `states` `(` type($new_states) `)`
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

def RNN_MatmulOp : RNN_Op<"matmul", [Pure]> {
  let summary = "Rows times a weight matrix, PyTorch's [out, in] layout by default";
  let description = [{
    `lhs` is `[..., K]` (rows: a `[B, K]` step tensor, or `[T, B, K]` for a
    projection over a whole sequence). By default `rhs` is `[N, K]`, the
    `[out, in]` layout of `torch.nn.Linear` and `torch.nn.LSTM` weights, and
    the result is `lhs · rhsᵀ`, `[..., N]`. With `weight_in_out`, `rhs` is
    `[K, N]` and the result is `lhs · rhs`.

    Precision: the result element type is the accumulation and output type.
    It equals the operands' element type, or is `f32` for `f16`/`bf16`
    operands (storage in half precision, accumulation in single).
    `allow_tf32` permits TF32 tensor-core arithmetic for `f32` operands (as
    cuDNN does by default); without it `f32` matmuls are full precision.

    With `acc`, a tensor of the result's type, the result is `acc` plus the
    product: one GEMM that accumulates onto `acc` (`rnn-accumulate-into-
    projection` makes the recurrent matmul accumulate onto the hoisted input
    projection this way, saving the fused kernel a read).

    ```mlir
    %g = rnn.matmul %h, %U : tensor<?x32xf32>, tensor<128x32xf32> -> tensor<?x128xf32>
    %p = rnn.matmul %xs, %W allow_tf32 : tensor<10x?x16xf32>, tensor<128x16xf32> -> tensor<10x?x128xf32>
    %q = rnn.matmul %h, %V weight_in_out : tensor<?x32xbf16>, tensor<32x64xbf16> -> tensor<?x64xf32>
    %r = rnn.matmul %h, %U acc %xp : tensor<?x32xf32>, tensor<128x32xf32>, tensor<?x128xf32> -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$lhs, RNN_FloatTensor:$rhs,
                       Optional<RNN_FloatTensor>:$acc,
                       UnitAttr:$weight_in_out, UnitAttr:$allow_tf32);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`acc` $acc^)? (`weight_in_out` $weight_in_out^)?
    (`allow_tf32` $allow_tf32^)?
    attr-dict `:` type($lhs) `,` type($rhs) (`,` type($acc)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The contraction size K and the output size N, read from the weight.
    int64_t getContractionSize();
    int64_t getOutputSize();
  }];
  let hasVerifier = 1;
}

def RNN_HeadwiseMatmulOp : RNN_Op<"headwise_matmul", [Pure]> {
  let summary = "Rows times a block-diagonal weight: one matrix per head";
  let description = [{
    The product with a block-diagonal matrix whose `NH` blocks are given
    separately: the recurrent product of a cell whose state is split into
    heads (the sLSTM of xLSTM, FlashRNN's cells). `lhs` is `[..., NH·K]`,
    head `h` owning columns `h·K .. h·K + K - 1`; `rhs` is `[NH, G·N, K]`,
    each head's `[out, in]` matrix in PyTorch's layout, its `G·N` rows
    being `gates` = `G` gates of `N` units each; the result is
    `[..., G·NH·N]`, **gate-major**:

    `result[..., g·NH·N + h·N + j] = Σ_k lhs[..., h·K + k] · rhs[h, g·N + j, k]`

    so that `rnn.split` into `G` equal pieces gives each gate for all heads,
    laid out `[NH·N]` head by head like the state: the cell's pointwise
    code is the same as with a dense recurrent matrix. With `gates = 1`
    it is the plain block-diagonal product.

    With `transposed`, the op applies the transpose of that linear map (the
    gradient of `lhs`): `lhs` is `[..., G·NH·N]` gate-major and the result
    `[..., NH·K]`,

    `result[..., h·K + k] = Σ_{g,j} lhs[..., g·NH·N + h·N + j] · rhs[h, g·N + j, k]`.

    Precision follows `rnn.matmul`: the result is the operands' element
    type, or `f32` for `f16`/`bf16` operands; `allow_tf32` permits TF32 for
    `f32` operands.

    ```mlir
    // 4 heads of 16 units, 4 gates: R is [4, 64, 16], the gates [B, 4·64].
    %g = rnn.headwise_matmul %h, %R gates 4 : tensor<?x64xf32>, tensor<4x64x16xf32> -> tensor<?x256xf32>
    %dh = rnn.headwise_matmul %dg, %R gates 4 transposed : tensor<?x256xf32>, tensor<4x64x16xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$lhs, RNN_FloatTensor:$rhs,
                       ConfinedAttr<I64Attr, [IntPositive]>:$gates,
                       UnitAttr:$transposed, UnitAttr:$allow_tf32);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `gates` $gates (`transposed` $transposed^)?
    (`allow_tf32` $allow_tf32^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// NH, N (units per head and gate) and K (inputs per head), read from
    /// the weight [NH, G·N, K].
    int64_t getNumHeads();
    int64_t getHeadOutputSize();
    int64_t getHeadInputSize();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise ops
//===----------------------------------------------------------------------===//

/// A binary pointwise op under the dialect's broadcasting rule; the result
/// type is inferred from the operands.
class RNN_BinaryOp<string mnemonic, string expr, list<Trait> traits = []>
    : RNN_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>])> {
  let summary = "Elementwise `" # expr # "` with broadcasting";
  let description = [{
    Computes `}] # expr # [{` elementwise. The operands share one element
    type and broadcast under the dialect's rule (trailing alignment; a
    dimension of 1, or a missing leading one, stretches): a bias `[N]`
    applies to every row of `[B, N]`, a scalar `tensor<f32>` to every
    element, a row statistic `[B, 1]` across its row.

    ```mlir
    %r = rnn.}] # mnemonic # [{ %a, %b : tensor<?x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$lhs, RNN_FloatTensor:$rhs);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def RNN_AddOp : RNN_BinaryOp<"add", "lhs + rhs", [Commutative]> {
  let hasFolder = 1;
}
def RNN_SubOp : RNN_BinaryOp<"sub", "lhs - rhs"> { let hasFolder = 1; }
def RNN_MulOp : RNN_BinaryOp<"mul", "lhs * rhs", [Commutative]> {
  let hasFolder = 1;
}
def RNN_DivOp : RNN_BinaryOp<"div", "lhs / rhs"> { let hasFolder = 1; }
def RNN_MaxOp : RNN_BinaryOp<"max", "max(lhs, rhs)", [Commutative]>;
def RNN_MinOp : RNN_BinaryOp<"min", "min(lhs, rhs)", [Commutative]>;

def RNN_ComparisonPredicate : I64EnumAttr<
    "ComparisonPredicate", "how rnn.select compares its first two operands", [
      I64EnumAttrCase<"eq", 0>, I64EnumAttrCase<"ne", 1>,
      I64EnumAttrCase<"lt", 2>, I64EnumAttrCase<"le", 3>,
      I64EnumAttrCase<"gt", 4>, I64EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::rnn";
}

def RNN_SelectOp : RNN_Op<"select", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Elementwise `lhs <predicate> rhs ? on_true : on_false`";
  let description = [{
    Compares `lhs` with `rhs` elementwise and takes `on_true` where the
    comparison holds, `on_false` where it does not. The predicate is one of
    `eq`, `ne`, `lt`, `le`, `gt`, `ge`, with IEEE semantics: a comparison
    with a NaN is false, except `ne`, which is true (as numpy's and torch's
    `==`, `!=`, `<`, ...). The four operands share one element type and
    broadcast together under the dialect's rule; the result has the
    broadcast shape.

    It is what a piecewise activation needs that min/max cannot say
    exactly, e.g. ONNX's ThresholdedRelu `x > alpha ? x : 0`, or an ELU
    `x >= 0 ? x : alpha·(exp(x) - 1)`. Its derivative sends the gradient to
    the chosen operand and none to the compared ones.

    ```mlir
    %y = rnn.select gt %x, %alpha, %x, %zero
        : tensor<?x32xf32>, tensor<f32>, tensor<?x32xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins RNN_ComparisonPredicate:$predicate,
                       RNN_FloatTensor:$lhs, RNN_FloatTensor:$rhs,
                       RNN_FloatTensor:$on_true, RNN_FloatTensor:$on_false);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $predicate $lhs `,` $rhs `,` $on_true `,` $on_false attr-dict `:`
    type($lhs) `,` type($rhs) `,` type($on_true) `,` type($on_false)
  }];
  let hasFolder = 1;
}

/// A unary pointwise op; the result has the operand's type.
class RNN_UnaryOp<string mnemonic, string expr, list<Trait> traits = []>
    : RNN_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType])> {
  let summary = "Elementwise `" # expr # "`";
  let description = [{
    Computes `}] # expr # [{` elementwise; the result has the operand's type.

    ```mlir
    %r = rnn.}] # mnemonic # [{ %a : tensor<?x32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def RNN_NegOp : RNN_UnaryOp<"neg", "-x"> { let hasFolder = 1; }
def RNN_SigmoidOp : RNN_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def RNN_TanhOp : RNN_UnaryOp<"tanh", "tanh(x)">;
def RNN_ReluOp : RNN_UnaryOp<"relu", "max(x, 0)">;
def RNN_ExpOp : RNN_UnaryOp<"exp", "exp(x)">;
def RNN_LogOp : RNN_UnaryOp<"log", "log(x)">;
def RNN_SqrtOp : RNN_UnaryOp<"sqrt", "sqrt(x)">;
def RNN_RsqrtOp : RNN_UnaryOp<"rsqrt", "1 / sqrt(x)">;

def RNN_HeavisideOp : RNN_Op<"heaviside", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise step function: 1 above 0, `at_zero` at 0, else 0";
  let description = [{
    Computes `x > 0 ? 1 : (x == 0 ? at_zero : 0)` elementwise (NaN gives 0),
    like `numpy.heaviside(x, at_zero)`. The derived backward builds the
    subgradients of `rnn.relu` (`at_zero = 0`, PyTorch's convention) and of
    `rnn.max` / `rnn.min` (`at_zero = 0.5`: a tie splits the gradient, as
    `torch.maximum` does) from it. Its own derivative is 0.

    ```mlir
    %d = rnn.heaviside %x {at_zero = 0.0 : f64} : tensor<?x32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.0">:$at_zero);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def RNN_ZerosLikeOp : RNN_Op<"zeros_like", [Pure, SameOperandsAndResultType]> {
  let summary = "A tensor of the operand's type, every element 0";
  let description = [{
    Zeros shaped like `input`, whose values are not read (only its dynamic
    sizes). The derived backward uses it for gradients that are zero with a
    dynamic batch size, where `rnn.constant` (static shapes) cannot say it.

    ```mlir
    %z = rnn.zeros_like %h : tensor<?x32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def RNN_ConstantOp : RNN_Op<"constant", [ConstantLike, Pure]> {
  let summary = "A tensor with every element equal to one number";
  let description = [{
    A splat constant. Usually rank 0 (`tensor<f32>`), which broadcasts to
    any shape; any static shape is allowed.

    ```mlir
    %one = rnn.constant 1.0 : tensor<f32>
    %half = rnn.constant 0.5 : tensor<32xbf16>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def RNN_CastOp : RNN_Op<"cast", [Pure]> {
  let summary = "Converts the element type (f16, bf16, f32, f64)";
  let description = [{
    Rounds or extends every element to another float type; the shape is
    unchanged. Used to keep a cell state in `f32` while the matmul operands
    are stored in `bf16` or `f16`.

    ```mlir
    %h16 = rnn.cast %h : tensor<?x32xf32> to tensor<?x32xbf16>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gate split and concatenation, transposes and reshapes
//===----------------------------------------------------------------------===//

def RNN_SplitOp : RNN_Op<"split", [Pure]> {
  let summary = "Splits a tensor into consecutive pieces along one axis";
  let description = [{
    Cuts `input` into consecutive pieces along `axis` (by default the last,
    feature axis), one per result; the pieces' sizes along `axis` add up to
    the input's and every other dimension is unchanged. Gates are usually
    split into equal pieces (4 of `H` for an LSTM), but sizes may differ.

    ```mlir
    %i, %f, %g, %o = rnn.split %gates : tensor<?x128xf32>
        -> tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
    %Wi, %Wr = rnn.split %W axis 0 : tensor<64x16xf32> -> tensor<32x16xf32>, tensor<32x16xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input, OptionalAttr<I64Attr>:$axis);
  let results = (outs Variadic<RNN_FloatTensor>:$results);
  let assemblyFormat = [{
    $input (`axis` $axis^)? attr-dict `:` type($input) `->` type($results)
  }];
  let extraClassDeclaration = [{
    /// The split axis (the last one unless `axis` says otherwise).
    int64_t getSplitAxis();
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def RNN_ConcatOp : RNN_Op<"concat", [Pure]> {
  let summary = "Concatenates tensors along one axis";
  let description = [{
    Joins the operands along `axis` (by default the last, feature axis);
    every other dimension must agree. Bidirectional layers concatenate their
    output sequences this way; gate weights stored `[out, in]` are stacked
    along axis 0.

    ```mlir
    %y = rnn.concat %fwd, %bwd : tensor<10x?x32xf32>, tensor<10x?x32xf32> -> tensor<10x?x64xf32>
    %W = rnn.concat %Wi, %Wf axis 0 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
    ```
  }];
  let arguments = (ins Variadic<RNN_FloatTensor>:$inputs,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs (`axis` $axis^)? attr-dict `:` type($inputs) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The concatenation axis (the last one unless `axis` says otherwise).
    int64_t getConcatAxis();
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def RNN_TransposeOp : RNN_Op<"transpose", [Pure]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    Dimension `i` of the result is dimension `permutation[i]` of the input:
    `result[i_0, ..., i_n] = input[j_0, ..., j_n]` with
    `j_permutation[k] = i_k`. Dynamic sizes (a sequence length, a batch)
    move with their dimension, so a function's result may be a transposed
    sequence and still have its sizes follow from its arguments (a
    batch-first `[B, T, N]` input or output, ONNX's `layout = 1`).

    ```mlir
    %xs = rnn.transpose %x permutation [1, 0, 2] : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `permutation` $permutation attr-dict `:` type($input) `->`
    type($result)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$input,
                                 "::llvm::ArrayRef<int64_t>":$permutation)>];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def RNN_ReshapeOp : RNN_Op<"reshape", [Pure]> {
  let summary = "Inserts or removes dimensions of size 1";
  let description = [{
    The same elements in the same order, with dimensions of size 1 added or
    dropped: the input's dimensions other than static 1s, in order, must be
    the result's dimensions other than static 1s (a dynamic size matches
    only a dynamic one). This is the reshape that stacking needs: a
    direction's `[T, B, H]` outputs become `[T, 1, B, H]` before an
    `rnn.concat` along axis 1 makes ONNX's `[T, D, B, H]`, and a
    `[1, B, H]` slice of initial states becomes the `[B, H]` a scan takes.
    Dimensions are never merged or split, so every dynamic size keeps its
    meaning and no data moves.

    ```mlir
    %y4 = rnn.reshape %ys : tensor<?x?x32xf32> -> tensor<?x1x?x32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Row reductions
//===----------------------------------------------------------------------===//

class RNN_RowReductionOp<string mnemonic, string what>
    : RNN_Op<mnemonic, [Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "The " # what # " of each row, keeping the axis as size 1";
  let description = [{
    Reduces the last axis of `input` to its }] # what # [{, keeping it as
    a dimension of size 1 so that the result broadcasts back over the row:
    `[B, N]` gives `[B, 1]`.

    ```mlir
    %m = rnn.}] # mnemonic # [{ %x : tensor<?x32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def RNN_ReduceSumOp : RNN_RowReductionOp<"reduce_sum", "sum">;
def RNN_ReduceMeanOp : RNN_RowReductionOp<"reduce_mean", "mean">;
def RNN_ReduceMaxOp : RNN_RowReductionOp<"reduce_max", "maximum">;

def RNN_SumToOp : RNN_Op<"sum_to", [Pure]> {
  let summary = "Sums a tensor down to a shape that broadcasts to it";
  let description = [{
    The adjoint of broadcasting: sums `input` over every dimension that
    broadcasting the result's shape to the input's would stretch (missing
    leading dimensions, and dimensions of size 1 in the result), like
    `torch.Tensor.sum_to_size`. The result must broadcast to the input
    under the dialect's rule. Its element type is the accumulation and
    output type, as for `rnn.matmul`: the input's, or `f32` for an `f16` or
    `bf16` input. A bias gradient is the `sum_to` of the gate gradients over
    all `T·B` rows: `[T, B, 4H] -> [4H]`.

    ```mlir
    %db = rnn.sum_to %dgates : tensor<?x?x128xf32> -> tensor<128xf32>
    %dr = rnn.sum_to %d : tensor<?x32xf32> -> tensor<?x1xf32>
    %db16 = rnn.sum_to %dgates16 : tensor<?x?x128xbf16> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def RNN_PreviousStatesOp : RNN_Op<"previous_states", [Pure,
    AllTypesMatch<["sequence", "result"]>]> {
  let summary = "The states a scan's steps started from, read from its outputs";
  let description = [{
    For a state that every step of a scan also emits as an output (an
    LSTM's or a GRU's `h`), the state step `t` started from is the output of
    the step before it, or the initial state at a row's first step:
    `result[t, b] = init[b]` at the first step of row `b` (`t = 0`; for a
    `reverse` scan `t = lengths[b] - 1`, or `T - 1` without lengths), else
    `sequence[t - 1, b]` (`sequence[t + 1, b]` for `reverse`); 0 at
    positions past a row's length. The backward reads `h_{t-1}` this way
    instead of saving a copy of the output sequence.

    ```mlir
    %h_prev = rnn.previous_states %ys, %h0 reverse lengths(%len : tensor<?xi32>)
        : tensor<?x?x32xf32>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$sequence, RNN_FloatTensor:$init,
                       Optional<RNN_LengthsTensor>:$lengths,
                       UnitAttr:$reverse);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $sequence `,` $init (`reverse` $reverse^)?
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)? attr-dict
    `:` type($sequence) `,` type($init)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$sequence,
                                 "::mlir::Value":$init,
                                 "::mlir::Value":$lengths, "bool":$reverse), [{
    build($_builder, $_state, sequence.getType(), sequence, init, lengths,
          reverse ? $_builder.getUnitAttr() : ::mlir::UnitAttr());
  }]>];
  let hasVerifier = 1;
}

def RNN_OuterSumOp : RNN_Op<"outer_sum", [Pure]> {
  let summary = "The sum over all rows of the outer products of two row tensors";
  let description = [{
    `result[n, k] = Σ_r lhs[r, n] · rhs[r, k]`, where `r` runs over every
    leading (row) index of the operands, which share their leading shape:
    `lhsᵀ · rhs` over all `T·B` rows of two sequences. This is a weight
    gradient: for `y = x · Wᵀ`, `dW = outer_sum(dy, x)`, one GEMM over the
    whole sequence. Element types follow `rnn.matmul`: the result is the
    operands' type, or `f32` for `f16`/`bf16` operands.

    ```mlir
    %dW = rnn.outer_sum %dgates, %xs : tensor<?x?x128xf32>, tensor<?x?x16xf32> -> tensor<128x16xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$lhs, RNN_FloatTensor:$rhs,
                       UnitAttr:$allow_tf32);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`allow_tf32` $allow_tf32^)? attr-dict `:` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RNN_HeadwiseOuterSumOp : RNN_Op<"headwise_outer_sum", [Pure]> {
  let summary = "The weight gradient of rnn.headwise_matmul over all rows";
  let description = [{
    Per head, the sum over all rows of the outer products of a gate-major
    row tensor `lhs` (`[..., G·NH·N]`) and a head-major one `rhs`
    (`[..., NH·K]`); the operands share their leading (row) shape and the
    result is `[NH, G·N, K]`, the layout of `rnn.headwise_matmul`'s weight:

    `result[h, g·N + j, k] = Σ_r lhs[r, g·NH·N + h·N + j] · rhs[r, h·K + k]`

    For `y = headwise_matmul(x, R)`, `dR = headwise_outer_sum(dy, x)` over
    all `T·B` rows, as `rnn.outer_sum` is for `rnn.matmul`. Element types
    follow `rnn.matmul`.

    ```mlir
    %dR = rnn.headwise_outer_sum %dgates, %hs gates 4 : tensor<?x?x256xf32>, tensor<?x?x64xf32> -> tensor<4x64x16xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$lhs, RNN_FloatTensor:$rhs,
                       ConfinedAttr<I64Attr, [IntPositive]>:$gates,
                       UnitAttr:$allow_tf32);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `gates` $gates (`allow_tf32` $allow_tf32^)? attr-dict `:`
    type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RNN_LayerNormOp : RNN_Op<"layer_norm", [Pure, SameOperandsAndResultType]> {
  let summary = "Normalises each row to zero mean and unit variance";
  let description = [{
    `(x - mean(x)) / sqrt(var(x) + epsilon)` over the last axis, with the
    biased (population) variance, as `torch.nn.LayerNorm` computes it. The
    learned gain and bias are ordinary `rnn.mul` / `rnn.add` with `[N]`
    vectors, so a cell may use them or not.

    ```mlir
    %n = rnn.layer_norm %x {epsilon = 1.0e-05 : f64} : tensor<?x128xf32>
    ```
  }];
  let arguments = (ins RNN_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs RNN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused pointwise groups
//===----------------------------------------------------------------------===//

def RNN_PointwiseOp : RNN_Op<"pointwise", [
    Pure, IsolatedFromAbove, SingleBlock,
    SingleBlockImplicitTerminator<"PointwiseYieldOp">]> {
  let summary = "A fused group of pointwise ops: one kernel, a scalar body";
  let description = [{
    Computes its results elementwise over one iteration space `[B, N]`. The
    body is scalar arithmetic (`arith` and `math` ops) run once per element
    `(b, j)`; it receives one scalar per *read* and yields one scalar per
    result *piece*.

    A read names an operand and a column offset, `%gates[64]`: at element
    `(b, j)` it reads the operand at row `b`, column `64 + j`. This is how gate
    splits become index arithmetic instead of copies: an LSTM's four gates are
    four reads of one `[B, 4H]` tensor at offsets `0, H, 2H, 3H`. Operands
    broadcast under the dialect's rule (a bias `[4H]` read at an offset, a
    row statistic `[B, 1]`, a scalar); a read without `[offset]` is at 0.

    A result is written the same way in reverse: a result of `k` pieces
    (`-> tensor<?x128xf32> pieces 4`) is `k` times as wide as the iteration
    space along the last axis, and takes `k` consecutive yielded scalars;
    piece `p` is written at columns `[p·N, (p+1)·N)`. This is how a
    concatenation of gates (a backward step's `[B, 4H]` gate gradients)
    is written in place instead of copied. A result without `pieces` has
    one, the iteration space's shape; the iteration space is any result's
    shape with its last dimension divided by its pieces
    (`result_pieces` in the generic form, one entry per result).

    `rnn.row_sum` / `rnn.row_max` in the body reduce a scalar over the whole
    row `b` of the iteration space, so normalisations fuse too; a lowering
    evaluates the body in phases around them.

    The op is one kernel per step: counting `rnn.matmul` and `rnn.pointwise`
    ops in a cell counts its kernels.

    ```mlir
    %h, %c = rnn.pointwise(%gates[0], %gates[32], %gates[64], %gates[96], %c0)
        : tensor<?x128xf32>, tensor<?x32xf32> -> tensor<?x32xf32>, tensor<?x32xf32> {
    ^bb0(%i: f32, %f: f32, %g: f32, %o: f32, %cp: f32):
      ...
      rnn.pointwise_yield %hn, %cn : f32, f32
    }
    // Four [B, 32] gate gradients written into one [B, 128] result.
    %dgates, %dcp = rnn.pointwise(%dh, %dc, %gates[0], %gates[32], %gates[64], %gates[96], %c0)
        : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x128xf32>, tensor<?x32xf32>
        -> tensor<?x128xf32> pieces 4, tensor<?x32xf32> {
    ^bb0(%dhv: f32, %dcv: f32, %i: f32, %f: f32, %g: f32, %o: f32, %cp: f32):
      ...
      rnn.pointwise_yield %di, %df, %dg, %do, %dcpv : f32, f32, f32, f32, f32
    }
    ```
  }];
  let arguments = (ins Variadic<RNN_FloatTensor>:$inputs,
                       DenseI64ArrayAttr:$read_operands,
                       DenseI64ArrayAttr:$read_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$result_pieces);
  let results = (outs Variadic<RNN_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    /// Creates the op with an empty body block, one argument per read.
    /// `resultPieces` gives each result's pieces (empty: one each); the
    /// attribute is only set when some result has more than one.
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes,
                   "::mlir::ValueRange":$inputs,
                   "::llvm::ArrayRef<int64_t>":$readOperands,
                   "::llvm::ArrayRef<int64_t>":$readOffsets,
                   CArg<"::llvm::ArrayRef<int64_t>", "{}">:$resultPieces)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The iteration space: result #0's shape with its last dimension
    /// divided by its pieces.
    ::mlir::RankedTensorType getIterationType();
    /// The pieces of result `result` (1 unless `result_pieces` says more).
    int64_t getNumPieces(unsigned result);
    /// The index, among the yielded values, of piece 0 of result `result`.
    unsigned getFirstYieldIndex(unsigned result);
    /// The number of yielded values: the pieces of all results.
    unsigned getNumYieldedValues();
  }];
}

def RNN_PointwiseYieldOp : RNN_Op<"pointwise_yield", [
    Pure, HasParent<"PointwiseOp">, Terminator]> {
  let summary = "Ends the body of rnn.pointwise: one scalar per result piece";
  let description = [{
    Yields one scalar per piece of each result, in order: a result of `k`
    pieces takes `k` consecutive values, piece 0 first.

    ```mlir
    rnn.pointwise_yield %h, %c : f32, f32
    ```
  }];
  let arguments = (ins Variadic<RNN_FloatElement>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let builders = [OpBuilder<(ins), [{ /* nothing */ }]>];
  let hasVerifier = 1;
}

class RNN_RowScalarReductionOp<string mnemonic, string what>
    : RNN_Op<mnemonic, [Pure, HasParent<"PointwiseOp">,
                        SameOperandsAndResultType]> {
  let summary = "The " # what # " of a scalar over its row, inside rnn.pointwise";
  let description = [{
    Inside the scalar body of `rnn.pointwise`: the }] # what # [{ of `value`
    over every column `j` of the current row `b` of the iteration space. The
    result is the same for every column of the row.

    ```mlir
    %s = rnn.}] # mnemonic # [{ %v : f32
    ```
  }];
  let arguments = (ins RNN_FloatElement:$value);
  let results = (outs RNN_FloatElement:$result);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def RNN_RowSumOp : RNN_RowScalarReductionOp<"row_sum", "sum">;
def RNN_RowMaxOp : RNN_RowScalarReductionOp<"row_max", "maximum">;

#endif // RNN_DIALECT_RNN_IR_RNNOPS_TD
