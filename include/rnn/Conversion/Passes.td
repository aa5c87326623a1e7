//===- Passes.td - Lowerings out of the rnn dialect --------*- tablegen -*-===//

#ifndef RNN_CONVERSION_PASSES_TD
#define RNN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertRNNToLinalg : Pass<"convert-rnn-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lowers scans, steps and cell ops to loops and linalg on tensors";
  let description = [{
    Every `rnn.scan` becomes an `scf.for` over the time axis whose body is
    the cell, inlined; every `rnn.step` becomes the inlined cell. Sequence
    lengths become per-row selects (a finished row keeps its state and
    outputs zeros); `reverse` walks the time axis backwards. Then every op of
    the dialect becomes tensor-level code: pointwise ops and fused
    `rnn.pointwise` groups become `linalg.generic` (a group with row
    reductions becomes one generic per phase between its reductions),
    reductions become reducing `linalg.generic`, splits and concatenations
    become `tensor` slices, and `rnn.matmul` becomes a contraction over the
    rows, a `linalg.generic` marked `rnn.gemm_weight_layout` (the library
    GEMM lowering later turns it into a BLAS or cuBLAS call; left alone it
    lowers to loops). The cells are erased.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def ConvertMatmulToLibraryGemm
    : Pass<"convert-matmul-to-library-gemm", "::mlir::ModuleOp"> {
  let summary = "Turns matmul contractions on memrefs into library GEMM calls";
  let description = [{
    The one place where matmuls meet a GEMM library. Each contraction that
    convert-rnn-to-linalg made of an `rnn.matmul` (a `linalg.generic` marked
    `rnn.gemm_weight_layout`), once on memrefs whose rows form one matrix
    (unit inner stride; packed leading dimensions), becomes a call

    ```
    func.call @<function>(ab_dtype, c_dtype, b_layout, m, n, k,
                          a, lda, b, ldb, c, ldc)
    ```

    with addresses and leading dimensions read from the memrefs'
    metadata: `b_layout` is 0 for a weight stored `[N, K]` (PyTorch's
    layout, `C = A·Bᵀ`) and 1 for `[K, N]`; dtypes use the runtime's
    `rnn_dtype` codes. The CPU backend names `rnn_cpu_gemm` (OpenBLAS) in
    `librnn_runtime`; a GPU backend names its cuBLAS entry point.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"rnn_cpu_gemm\"",
           "The GEMM entry point to call">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let statistics = [
    Statistic<"numCalls", "gemm-calls", "Contractions turned into calls">
  ];
}

#endif // RNN_CONVERSION_PASSES_TD
