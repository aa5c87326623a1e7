//===- RNNOps.h - Operations of the rnn dialect -----------------*- C++ -*-===//

#ifndef RNN_DIALECT_RNN_IR_RNNOPS_H
#define RNN_DIALECT_RNN_IR_RNNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "rnn/Dialect/RNN/IR/RNNDialect.h"

#include "rnn/Dialect/RNN/IR/RNNEnums.h.inc"

namespace rnn {
class YieldOp;
} // namespace rnn

#define GET_OP_CLASSES
#include "rnn/Dialect/RNN/IR/RNNOps.h.inc"

#endif // RNN_DIALECT_RNN_IR_RNNOPS_H
