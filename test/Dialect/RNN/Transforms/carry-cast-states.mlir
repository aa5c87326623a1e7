// RUN: rnn-opt %s -split-input-file --rnn-carry-cast-states | FileCheck %s

// The bf16 LSTM's h is read only through a cast to bf16: a bf16 companion
// state carries the cast, computed from the new h before the yield; every
// application passes the cast of h0 and gets one more final state.
// CHECK-LABEL: rnn.cell @bf16_step
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>, %[[H16:[^:]*]]: tensor<?x4xbf16>)
// CHECK-NOT: rnn.cast %[[H]]
// CHECK: rnn.matmul %[[H16]], %{{.*}} acc
// CHECK: %[[HN:.*]] = rnn.tanh
// CHECK: %[[NEXT16:.*]] = rnn.cast %[[HN]] : tensor<?x4xf32> to tensor<?x4xbf16>
// CHECK: rnn.yield outputs(%[[HN]] : tensor<?x4xf32>) states(%[[HN]], %[[NEXT16]] : tensor<?x4xf32>, tensor<?x4xbf16>)
// CHECK-LABEL: func.func @run
// CHECK: %[[INIT16:.*]] = rnn.cast %arg1 : tensor<3x4xf32> to tensor<3x4xbf16>
// CHECK: %{{.*}}, %[[FINAL:.*]]:2 = rnn.scan @bf16_step inputs(%arg0 : tensor<?x3x4xf32>) init(%arg1, %[[INIT16]] : tensor<3x4xf32>, tensor<3x4xbf16>)
// CHECK-SAME: states(tensor<3x4xf32>, tensor<3x4xbf16>)
// CHECK: return %{{.*}}, %[[FINAL]]#0
rnn.cell @bf16_step inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xbf16>) -> (tensor<?x4xf32>) {
  %h16 = rnn.cast %h : tensor<?x4xf32> to tensor<?x4xbf16>
  %g = rnn.matmul %h16, %U acc %p : tensor<?x4xbf16>, tensor<4x4xbf16>, tensor<?x4xf32> -> tensor<?x4xf32>
  %hn = rnn.tanh %g : tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @run(%ps: tensor<?x3x4xf32>, %h0: tensor<3x4xf32>, %U: tensor<4x4xbf16>) -> (tensor<?x3x4xf32>, tensor<3x4xf32>) {
  %ys, %hT = rnn.scan @bf16_step inputs(%ps : tensor<?x3x4xf32>) init(%h0 : tensor<3x4xf32>)
      params(%U : tensor<4x4xbf16>) -> outputs(tensor<?x3x4xf32>) states(tensor<3x4xf32>)
  return %ys, %hT : tensor<?x3x4xf32>, tensor<3x4xf32>
}

// -----

// A state also read directly (a GRU's z⊙h) keeps those reads and still gets
// the companion for the matmul: the cast moves to the end of the step.
// CHECK-LABEL: rnn.cell @read_directly
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>, %[[H16:[^:]*]]: tensor<?x4xbf16>) params
// CHECK-NOT: rnn.cast %[[H]]
// CHECK: rnn.matmul %[[H16]], %{{.*}} : tensor<?x4xbf16>
// CHECK: %[[S:.*]] = rnn.add %{{.*}}, %[[H]]
// CHECK: %[[S16:.*]] = rnn.cast %[[S]] : tensor<?x4xf32> to tensor<?x4xbf16>
// CHECK: rnn.yield outputs(%[[S]] : tensor<?x4xf32>) states(%[[S]], %[[S16]] :
rnn.cell @read_directly inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xbf16>) -> (tensor<?x4xf32>) {
  %h16 = rnn.cast %h : tensor<?x4xf32> to tensor<?x4xbf16>
  %g = rnn.matmul %h16, %U : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %s = rnn.add %g, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @run2(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %U: tensor<4x4xbf16>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @read_directly inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U : tensor<4x4xbf16>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// Casts to two types: no single companion type, the cell is left alone.
// CHECK-LABEL: rnn.cell @two_types
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x4xf32>) params
// CHECK: rnn.cast
// CHECK: rnn.cast
rnn.cell @two_types inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xbf16>, %V: tensor<4x4xf16>) -> (tensor<?x4xf32>) {
  %h16 = rnn.cast %h : tensor<?x4xf32> to tensor<?x4xbf16>
  %hh = rnn.cast %h : tensor<?x4xf32> to tensor<?x4xf16>
  %g = rnn.matmul %h16, %U : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %k = rnn.matmul %hh, %V : tensor<?x4xf16>, tensor<4x4xf16> -> tensor<?x4xf32>
  %s = rnn.add %g, %k : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @run3(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %U: tensor<4x4xbf16>, %V: tensor<4x4xf16>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @two_types inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U, %V : tensor<4x4xbf16>, tensor<4x4xf16>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}
