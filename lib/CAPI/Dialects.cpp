//===- Dialects.cpp - The rnn dialect in MLIR's C API ---------------------===//

#include "rnn-c/Dialects.h"

#include "rnn/Dialect/RNN/IR/RNNDialect.h"
#include "rnn/Registration.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(RNN, rnn, rnn::RNNDialect)

void rnnRegisterPasses(void) { rnn::registerPasses(); }

void rnnRegisterDialects(MlirDialectRegistry registry) {
  rnn::registerDialects(*unwrap(registry));
}
