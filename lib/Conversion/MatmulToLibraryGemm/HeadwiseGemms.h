//===- HeadwiseGemms.h - Head-wise products as batched GEMMs ----*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_HEADWISEGEMMS_H
#define RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_HEADWISEGEMMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace rnn::gemm {

/// The strided-batched calls of one head-wise product (HeadwiseLowering's
/// generic, marked with its form), heads as the batch, one call per gate:
///   forward     out[r, g, h, :] = x[r, h, :] · R[h, g]ᵀ        (m = rows)
///   transposed  out[r, h, :] = Σ_g d[r, g, h, :] · R[h, g]     (m = rows)
///   outer sum   out[h, g] = Σ_r d[r, g, h, :]ᵀ · x[r, h, :]     (k = rows)
/// The rows (leading dimensions) must form one matrix dimension: packed by
/// the type, or checked at run time with the generic as the fallback.
/// Returns false, leaving the generic, when the operands do not qualify.
bool convertHeadwiseProduct(mlir::linalg::GenericOp generic,
                            mlir::func::FuncOp callee, int32_t layoutFlags,
                            unsigned &roundedStores);

} // namespace rnn::gemm

#endif // RNN_LIB_CONVERSION_MATMULTOLIBRARYGEMM_HEADWISEGEMMS_H
