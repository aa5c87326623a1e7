// RUN: rnn-opt %s -split-input-file --rnn-accumulate-into-projection | FileCheck %s

// The LSTM's pre-activations after hoisting: (p + b_W) + (h U^T + b_U). The
// matmul accumulates onto the projected row p and the remaining terms are
// added onto its result.
// CHECK-LABEL: rnn.cell @lstm_gates
// CHECK-SAME: inputs(%[[P:.*]]: tensor<?x8xf32>) states(%[[H:.*]]: tensor<?x2xf32>) params(%[[U:.*]]: tensor<8x2xf32>, %[[BW:.*]]: tensor<8xf32>, %[[BU:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[G:.*]] = rnn.matmul %[[H]], %[[U]] acc %[[P]] allow_tf32 : tensor<?x2xf32>, tensor<8x2xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[S1:.*]] = rnn.add %[[G]], %[[BW]]
// CHECK-NEXT: %[[S2:.*]] = rnn.add %[[S1]], %[[BU]]
// CHECK-NEXT: rnn.sigmoid %[[S2]]
rnn.cell @lstm_gates inputs(%p: tensor<?x8xf32>) states(%h: tensor<?x2xf32>)
    params(%U: tensor<8x2xf32>, %bW: tensor<8xf32>, %bU: tensor<8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U allow_tf32 : tensor<?x2xf32>, tensor<8x2xf32> -> tensor<?x8xf32>
  %a = rnn.add %p, %bW : tensor<?x8xf32>, tensor<8xf32>
  %b = rnn.add %uh, %bU : tensor<?x8xf32>, tensor<8xf32>
  %g = rnn.add %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
  %s = rnn.sigmoid %g : tensor<?x8xf32>
  rnn.yield outputs(%s : tensor<?x8xf32>) states(%h : tensor<?x2xf32>)
}

// -----

// The GRU's candidate: the recurrent term is multiplied by r before it meets
// the projection, so no sum holds both: nothing changes.
// CHECK-LABEL: rnn.cell @gru_candidate
// CHECK-NOT: acc
// CHECK: rnn.mul
rnn.cell @gru_candidate inputs(%p: tensor<?x2xf32>, %r: tensor<?x2xf32>) states(%h: tensor<?x2xf32>)
    params(%U: tensor<2x2xf32>) -> (tensor<?x2xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x2xf32>, tensor<2x2xf32> -> tensor<?x2xf32>
  %ru = rnn.mul %r, %uh : tensor<?x2xf32>, tensor<?x2xf32>
  %n = rnn.add %p, %ru : tensor<?x2xf32>, tensor<?x2xf32>
  %t = rnn.tanh %n : tensor<?x2xf32>
  rnn.yield outputs(%t : tensor<?x2xf32>) states(%t : tensor<?x2xf32>)
}

// -----

// A projected row that the cell reads elsewhere too stays as it is (the
// accumulation would need a copy of it). f16 operands with an f32 result
// accumulate like f32 ones.
// CHECK-LABEL: rnn.cell @read_twice
// CHECK-NOT: acc
// CHECK: rnn.yield
// CHECK-LABEL: rnn.cell @half_operands
// CHECK: rnn.matmul %{{.*}}, %{{.*}} acc %{{.*}} : tensor<?x2xf16>, tensor<4x2xf16>, tensor<?x4xf32> -> tensor<?x4xf32>
rnn.cell @read_twice inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %p, %uh : tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.mul %s, %p : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%m : tensor<?x4xf32>) states(%m : tensor<?x4xf32>)
}
rnn.cell @half_operands inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x2xf16>)
    params(%U: tensor<4x2xf16>) -> (tensor<?x4xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x2xf16>, tensor<4x2xf16> -> tensor<?x4xf32>
  %s = rnn.add %uh, %p : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%h : tensor<?x2xf16>)
}
