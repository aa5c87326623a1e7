/*===- rnn-c/Dialects.h - The rnn dialect in MLIR's C API ---------*- C -*-===*\
|*                                                                            *|
|* For tools built on MLIR's C API (or its Python bindings): the rnn          *|
|* dialect's handle, and the registration of its passes and pipelines.        *|
|* libRNNCAPI.so carries MLIR's core C API (MLIRCAPIIR) beside these, over    *|
|* libMLIR.so: a C program links it alone. docs/embedding.md has an example. *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef RNN_C_DIALECTS_H
#define RNN_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__rnn__(): register or load the rnn dialect with
 * mlirDialectHandleRegisterDialect / mlirDialectHandleLoadDialect. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(RNN, rnn);

/* Registers rnn's passes, lowerings and pipelines (rnn-optimize, ...) in the
 * global pass registry, for mlirParsePassPipeline. */
MLIR_CAPI_EXPORTED void rnnRegisterPasses(void);

/* Registers the rnn dialect and the upstream dialects its passes create
 * (as rnn::registerDialects) into `registry`. */
MLIR_CAPI_EXPORTED void rnnRegisterDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif /* RNN_C_DIALECTS_H */
