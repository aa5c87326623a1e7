//===- BufferViews.h - The buffer behind a view -----------------*- C++ -*-===//

#ifndef RNN_LIB_CONVERSION_BUFFERVIEWS_H
#define RNN_LIB_CONVERSION_BUFFERVIEWS_H

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace rnn {

/// The buffer `view` is a view of (through subviews, casts, reshapes).
inline mlir::Value rootBuffer(mlir::Value view) {
  while (auto viewOp = view.getDefiningOp<mlir::ViewLikeOpInterface>())
    view = viewOp.getViewSource();
  return view;
}

} // namespace rnn

#endif // RNN_LIB_CONVERSION_BUFFERVIEWS_H
