//===- RNNDialect.h - The rnn dialect ---------------------------*- C++ -*-===//

#ifndef RNN_DIALECT_RNN_IR_RNNDIALECT_H
#define RNN_DIALECT_RNN_IR_RNNDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "rnn/Dialect/RNN/IR/RNNOpsDialect.h.inc"

#endif // RNN_DIALECT_RNN_IR_RNNDIALECT_H
