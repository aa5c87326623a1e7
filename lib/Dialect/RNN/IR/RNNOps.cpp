//===- RNNOps.cpp - Generated op definitions of the rnn dialect -----------===//
//
// The hand-written parts of the ops live in files named after what they
// define (CellOps.cpp, MatmulOp.cpp, PointwiseOps.cpp, ShapeOps.cpp); this file
// only instantiates the generated definitions.
//
//===----------------------------------------------------------------------===//

#include "rnn/Dialect/RNN/IR/RNNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace rnn;

#include "rnn/Dialect/RNN/IR/RNNEnums.cpp.inc"

#define GET_OP_CLASSES
#include "rnn/Dialect/RNN/IR/RNNOps.cpp.inc"
