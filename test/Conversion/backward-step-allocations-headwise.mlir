// RUN: rnn-opt %s --canonicalize --rnn-differentiate --rnn-optimize | rnn-opt --rnn-bufferize | FileCheck %s

// The backward of a head-wise cell allocates nothing per step either: the
// transposed head-wise product that gives the next state gradient is
// written into the state's own buffer (seen as [B, NH, K] through an
// expand_shape), not into a fresh one that the loop would carry.
// CHECK-LABEL: func.func @seq_backward
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK-NOT: memref.alloc
// CHECK: %[[DH:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 2, 4] : memref<?x8xf32> into memref<?x2x4xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[DH]] : memref<?x2x4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[DH]] : memref<?x2x4xf32>) attrs = {rnn.headwise_gemm = 1 : i32}
// CHECK-NOT: memref.alloc
// CHECK: }
rnn.cell @cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%R: tensor<2x4x4xf32>) -> (tensor<?x8xf32>) {
  %p = rnn.headwise_matmul %h, %R gates 1 : tensor<?x8xf32>, tensor<2x4x4xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %p : tensor<?x8xf32>, tensor<?x8xf32>
  %y = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%y : tensor<?x8xf32>) states(%y : tensor<?x8xf32>)
}

func.func @seq(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>, %R: tensor<2x4x4xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x8xf32>) {
  %ys, %hT = rnn.scan @cell inputs(%xs : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>)
      params(%R : tensor<2x4x4xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys, %hT : tensor<?x?x8xf32>, tensor<?x8xf32>
}
