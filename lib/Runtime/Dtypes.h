//===- Dtypes.h - Names of the runtime's element types ----------*- C++ -*-===//

#ifndef RNN_LIB_RUNTIME_DTYPES_H
#define RNN_LIB_RUNTIME_DTYPES_H

#include "rnn/Runtime/rnn_runtime.h"

#include <cstdint>

namespace rnn::runtime {

/// The manifest's name of a dtype ("f32", ...), or null for a value outside
/// the enum (which a C caller can pass, so it takes an int).
inline const char *dtypeName(int dtype) {
  switch (dtype) {
  case RNN_F32:
    return "f32";
  case RNN_F64:
    return "f64";
  case RNN_BF16:
    return "bf16";
  case RNN_F16:
    return "f16";
  case RNN_I32:
    return "i32";
  case RNN_I64:
    return "i64";
  default:
    return nullptr;
  }
}

/// The bytes of one element of `dtype`, a valid rnn_dtype.
inline int64_t dtypeBytes(int dtype) {
  switch (dtype) {
  case RNN_F64:
  case RNN_I64:
    return 8;
  case RNN_BF16:
  case RNN_F16:
    return 2;
  default:
    return 4;
  }
}

} // namespace rnn::runtime

#endif // RNN_LIB_RUNTIME_DTYPES_H
