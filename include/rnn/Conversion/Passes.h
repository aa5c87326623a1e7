//===- Passes.h - Lowerings out of the rnn dialect --------------*- C++ -*-===//

#ifndef RNN_CONVERSION_PASSES_H
#define RNN_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace rnn {

/// Marks the linalg.generic that convert-rnn-to-linalg makes of an
/// rnn.matmul (a contraction over rows) with its weight layout, 0 for
/// [N, K] and 1 for [K, N]; convert-matmul-to-library-gemm turns the marked
/// ops into GEMM calls.
constexpr llvm::StringLiteral kGemmWeightLayoutAttr = "rnn.gemm_weight_layout";
/// Marks the linalg.generic that convert-rnn-to-linalg makes of a head-wise
/// product (not as per-head GEMMs) with its form: kHeadwiseForward,
/// kHeadwiseTransposed (rnn.headwise_matmul, `transposed`) or
/// kHeadwiseOuterSum (rnn.headwise_outer_sum). With a `batched-function`,
/// convert-matmul-to-library-gemm turns each into one strided-batched GEMM
/// call per gate, the heads as the batch.
constexpr llvm::StringLiteral kHeadwiseGemmAttr = "rnn.headwise_gemm";
enum HeadwiseGemmForm : int32_t {
  kHeadwiseForward = 0,
  kHeadwiseTransposed = 1,
  kHeadwiseOuterSum = 2,
};
/// Marks a contraction whose rnn.matmul allowed TF32 arithmetic.
constexpr llvm::StringLiteral kGemmAllowTf32Attr = "rnn.gemm_allow_tf32";
/// Marks the linalg ops that convert-rnn-to-linalg makes of one rnn.pointwise
/// group with row reductions (its phases and reductions), with an id unique
/// in the function; convert-row-groups-to-kernels runs each marked group as
/// one kernel with a block per row.
constexpr llvm::StringLiteral kRowGroupAttr = "rnn.row_group";
/// Marks a gpu.launch whose blocks run a whole recurrence
/// (convert-step-loops-to-block-kernels): overlap-kernel-launches launches
/// it in stream order, never early behind the grid ahead.
constexpr llvm::StringLiteral kPersistentLaunchAttr = "rnn.persistent_launch";

#define GEN_PASS_DECL
#include "rnn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "rnn/Conversion/Passes.h.inc"

} // namespace rnn

#endif // RNN_CONVERSION_PASSES_H
