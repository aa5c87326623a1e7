//===- RNNDialect.td - The rnn dialect definition ----------*- tablegen -*-===//
//
// The `rnn` dialect: recurrent cells written from a small closed set of
// tensor primitives, and the scan that applies a cell over a sequence.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_DIALECT_RNN_IR_RNNDIALECT_TD
#define RNN_DIALECT_RNN_IR_RNNDIALECT_TD

include "mlir/IR/OpBase.td"

def RNN_Dialect : Dialect {
  let name = "rnn";
  let cppNamespace = "::rnn";
  let summary = "Recurrent cells and the scans that apply them over sequences";
  let description = [{
    The `rnn` dialect describes LSTM-like recurrent networks so that a compiler
    can optimise any cell the way cuDNN optimises its built-in LSTM.

    Two levels are kept apart:

    * `rnn.cell` is one time step, written once as a symbol: per-step inputs,
      carried states and parameters in; step outputs and new states out. Its
      body uses a small closed set of ops on `[B, N]` tensors: `rnn.matmul`,
      pointwise math with one broadcasting rule, `rnn.split` / `rnn.concat`
      on the feature axis, and row reductions (`rnn.reduce_*`,
      `rnn.layer_norm`).
    * `rnn.scan` applies a cell over sequences `[T, B, I]`; `rnn.step`
      applies it once. Layers and directions are compositions of scans in an
      ordinary function, so the compiler sees all of them.

    Broadcasting rule (the only one): the operands of a binary pointwise op
    are aligned at their trailing dimensions; each pair of aligned dimensions
    must be equal or one of them must be 1, and missing leading dimensions
    count as 1 (numpy's rule). A bias `[N]` thus applies to every row of a
    `[B, N]` tensor, a scalar `tensor<f32>` to every element, and a row
    statistic `[B, 1]` to every column of its row. A dynamic batch `?` only
    matches `?` or `1`.

    Element types are `f16`, `bf16`, `f32` and `f64`. Feature sizes are
    static; the batch dimension (and the sequence length) may be dynamic.
  }];
  // The scalar bodies of fused groups (rnn.pointwise) are arith and math.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
  let hasConstantMaterializer = 1;
  let usePropertiesForAttributes = 1;
}

class RNN_Op<string mnemonic, list<Trait> traits = []>
    : Op<RNN_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def RNN_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;

def RNN_FloatTensor : RankedTensorOf<[F16, BF16, F32, F64]>;

def RNN_LengthsTensor : 1DTensorOf<[I32, I64]>;

#endif // RNN_DIALECT_RNN_IR_RNNDIALECT_TD
