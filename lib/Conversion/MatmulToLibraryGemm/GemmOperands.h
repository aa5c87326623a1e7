//===- GemmOperands.h - Operands of the library GEMM calls ------*- C++ -*-===//
//
// What convert-matmul-to-library-gemm's rewrites share about the operands of
// a contraction they turn into a call: the b_layout bits, the runtime's dtype
// codes, which layouts a call can read, the dead zero fill a call makes
// redundant, and an operand's address and row stride as call arguments.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_GEMMOPERANDS_H
#define RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_GEMMOPERANDS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

#include <utility>

namespace rnn::gemm {

/// b_layout's accumulate bit (RNN_GEMM_ACCUMULATE in rnn_cpu_gemm.h).
constexpr int32_t kAccumulateFlag = 4;

/// b_layout's bit for a B that stays unchanged during the call
/// (RNN_GEMM_B_CONSTANT in rnn_cuda_runtime.h).
constexpr int32_t kConstantBFlag = 8;

/// b_layout's bit for a product inside a loop, which runs once per step
/// (RNN_GEMM_PER_STEP in rnn_cuda_runtime.h).
constexpr int32_t kPerStepFlag = 16;

/// b_layout's bit for an A stored k x m (RNN_GEMM_A_KM in
/// rnn_cuda_runtime.h).
constexpr int32_t kTransposedAFlag = 32;

/// The runtime's rnn_dtype code of a float type, or -1.
int32_t dtypeCode(mlir::Type type);

/// Whether the rows of a `[..., C]` memref can form one `[M, C]` matrix:
/// a strided layout with unit inner stride. For rank > 2 the leading
/// dimensions must also be packed (stride[d] = stride[d+1] * size[d+1]),
/// which the caller checks.
bool hasUnitInnerStride(mlir::MemRefType type);

/// The contraction accumulates onto a zero-filled buffer; the GEMM call
/// overwrites it (beta = 0), so a fill of the same buffer with zero just
/// before, with nothing in between that touches memory, is dead where the
/// call runs (a fill of another value is not: the call adds onto it).
mlir::linalg::FillOp findDeadZeroFill(mlir::linalg::GenericOp contraction,
                                      mlir::Value buffer);

/// Null when the first `count` dimensions of `memref` are packed rows by
/// its type (one dimension, or an identity layout); otherwise an i1 that
/// says whether they are at run time (each stride the next one's times its
/// size), for the rows to form one matrix dimension.
mlir::Value leadingDimsPacked(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value memref, unsigned count);

/// The address of a memref's first element as i64, and the distance between
/// its rows (the row length when rows are packed).
std::pair<mlir::Value, mlir::Value>
addressAndRowStride(mlir::OpBuilder &builder, mlir::Location loc,
                    mlir::Value memref);

} // namespace rnn::gemm

#endif // RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_GEMMOPERANDS_H
