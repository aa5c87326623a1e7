"""rnn: a compiler for recurrent cells. This package wraps the tools from Python:
`compile_mlir` runs rnn-compile, `Model` loads and runs the library it makes (through
librnn_runtime's C ABI, with ctypes)."""

from .runtime import Model, RNNError, CompileError, compile_mlir
