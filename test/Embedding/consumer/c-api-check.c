/* A C program on MLIR's C API and rnn's (rnn-c/Dialects.h): registers the
 * dialect and its passes, parses and verifies a module holding a cell and a
 * scan, runs rnn-optimize on it by name, prints it; then shows that an
 * invalid cell is rejected at parse time. */
#include "rnn-c/Dialects.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>

static const char *const valid =
    "rnn.cell @elman inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)\n"
    "    params(%W: tensor<4x3xf32>, %U: tensor<4x4xf32>) -> "
    "(tensor<?x4xf32>) {\n"
    "  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<4x3xf32> -> "
    "tensor<?x4xf32>\n"
    "  %uh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> "
    "tensor<?x4xf32>\n"
    "  %s = rnn.add %wx, %uh : tensor<?x4xf32>, tensor<?x4xf32>\n"
    "  %t = rnn.tanh %s : tensor<?x4xf32>\n"
    "  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)\n"
    "}\n"
    "func.func @seq(%xs: tensor<?x?x3xf32>, %h0: tensor<?x4xf32>,\n"
    "    %W: tensor<4x3xf32>, %U: tensor<4x4xf32>) -> (tensor<?x?x4xf32>, "
    "tensor<?x4xf32>) {\n"
    "  %ys, %hT = rnn.scan @elman inputs(%xs : tensor<?x?x3xf32>) init(%h0 : "
    "tensor<?x4xf32>)\n"
    "      params(%W, %U : tensor<4x3xf32>, tensor<4x4xf32>)\n"
    "      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)\n"
    "  return %ys, %hT : tensor<?x?x4xf32>, tensor<?x4xf32>\n"
    "}\n";

/* The state is [B, 4] but the cell yields [B, 3]. */
static const char *const invalid =
    "rnn.cell @bad inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>) "
    "-> (tensor<?x3xf32>) {\n"
    "  rnn.yield outputs(%x : tensor<?x3xf32>) states(%x : tensor<?x3xf32>)\n"
    "}\n";

static void print(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

int main(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  rnnRegisterDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);
  mlirDialectHandleLoadDialect(mlirGetDialectHandle__rnn__(), context);
  rnnRegisterPasses();

  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(valid));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "c-api-check: the valid module did not parse\n");
    return 1;
  }
  MlirOperation op = mlirModuleGetOperation(module);
  printf("parsed and verified: %s\n", mlirOperationVerify(op) ? "yes" : "no");

  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString("builtin.module(rnn-optimize)"), print,
      NULL);
  if (mlirLogicalResultIsFailure(parsed) ||
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op))) {
    fprintf(stderr, "c-api-check: rnn-optimize failed\n");
    return 1;
  }
  mlirOperationPrint(op, print, NULL);
  printf("\n");
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);

  MlirModule bad =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(invalid));
  printf("invalid module rejected: %s\n", mlirModuleIsNull(bad) ? "yes" : "no");
  if (!mlirModuleIsNull(bad))
    mlirModuleDestroy(bad);
  mlirContextDestroy(context);
  return 0;
}
