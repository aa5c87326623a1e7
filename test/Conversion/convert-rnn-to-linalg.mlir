// RUN: rnn-opt %s -split-input-file --convert-rnn-to-linalg | FileCheck %s

// A scan is a loop over time around the inlined cell; the matmul is a marked
// contraction; nothing of the rnn dialect is left.
// CHECK-LABEL: func.func @elman
// CHECK-NOT: rnn.
// CHECK: %[[T:.*]] = tensor.dim %arg0, %c0
// CHECK: scf.for %[[I:.*]] = %c0{{.*}} to %[[T]] step %c1{{.*}} iter_args(
// CHECK: tensor.extract_slice %arg0[%[[I]], 0, 0]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: rnn.gemm_weight_layout = 0 : i32
// CHECK: math.tanh
// CHECK: tensor.insert_slice {{.*}} into %{{.*}}[%[[I]], 0, 0]
// CHECK: scf.yield
// CHECK-NOT: rnn.
rnn.cell @cell inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<4x3xf32>, %U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %uh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %wx, %uh : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}
func.func @elman(%xs: tensor<?x?x3xf32>, %h0: tensor<?x4xf32>, %W: tensor<4x3xf32>, %U: tensor<4x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x4xf32>) {
  %ys, %hT = rnn.scan @cell inputs(%xs : tensor<?x?x3xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W, %U : tensor<4x3xf32>, tensor<4x4xf32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys, %hT : tensor<?x?x4xf32>, tensor<?x4xf32>
}

// -----

// Reverse: step i runs position T - 1 - i. Lengths: rows past their length
// keep their state (select against the old state) and output zeros.
// CHECK-LABEL: func.func @reverse_lengths
// CHECK: scf.for %[[I:.*]] = {{.*}} iter_args(
// CHECK: %[[LAST:.*]] = arith.subi %{{.*}}, %c1
// CHECK: %[[POS:.*]] = arith.subi %[[LAST]], %[[I]]
// CHECK: linalg.generic
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK: linalg.generic
// CHECK: arith.cmpi slt
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[ZERO]]
// CHECK: tensor.insert_slice {{.*}}[%[[POS]], 0, 0]
rnn.cell @acc inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %s = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @reverse_lengths(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %len: tensor<?xi32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @acc reverse inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      lengths(%len : tensor<?xi32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// A fused group with a row reduction: one generic computes what the
// reduction needs, a reducing generic sums the rows, a second generic reads
// the sums.
// CHECK-LABEL: func.func @group_with_reduction
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.divf
// CHECK-NOT: rnn.
func.func @group_with_reduction(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %r = rnn.pointwise(%x, %x[4]) : tensor<?x8xf32> -> tensor<?x4xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    %sum = rnn.row_sum %s : f32
    %n = arith.divf %s, %sum : f32
    rnn.pointwise_yield %n : f32
  }
  return %r : tensor<?x4xf32>
}

// -----

// A step is the inlined cell, cast between the cell's dynamic batch and the
// step's static one.
// CHECK-LABEL: func.func @one_step
// CHECK: tensor.cast %arg0 : tensor<2x4xf32> to tensor<?x4xf32>
// CHECK: linalg.generic
// CHECK: tensor.cast %{{.*}} : tensor<?x4xf32> to tensor<2x4xf32>
rnn.cell @acc inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) {
  %s = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%s : tensor<?x4xf32>)
}
func.func @one_step(%x: tensor<2x4xf32>, %h: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h1 = rnn.step @acc inputs(%x : tensor<2x4xf32>) states(%h : tensor<2x4xf32>) -> states(tensor<2x4xf32>)
  return %h1 : tensor<2x4xf32>
}
