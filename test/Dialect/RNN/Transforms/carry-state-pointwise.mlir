// RUN: rnn-opt %s -split-input-file --rnn-carry-state-pointwise | FileCheck %s
// Idempotence: a carried value is a state; a second run finds nothing.
// RUN: rnn-opt %s -split-input-file --rnn-carry-state-pointwise --rnn-carry-state-pointwise | FileCheck %s

// tanh(h)·Uᵀ: tanh(h) would be a kernel of its own at the start of every
// step. It is carried: the matmul reads the carried state, the cell yields
// tanh of the new h (the fused group that computes h computes it too), the
// scan passes tanh(h0) and the step tanh of the scan's final h. The reverse
// scan keeps its lengths: a masked step passes every state through, tanh(h)
// with h.
// CHECK-LABEL: rnn.cell @tanh_state
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>, %[[T:[^:]*]]: tensor<?x4xf32>)
// CHECK-NOT: rnn.tanh %[[H]]
// CHECK: rnn.matmul %[[T]],
// CHECK: %[[HN:.*]] = rnn.sigmoid
// CHECK: %[[TN:.*]] = rnn.tanh %[[HN]]
// CHECK: rnn.yield outputs(%[[HN]] : tensor<?x4xf32>) states(%[[HN]], %[[TN]] : tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-LABEL: func.func @run
// CHECK: %[[T0:.*]] = rnn.tanh %arg1 : tensor<3x4xf32>
// CHECK: %{{.*}}, %[[FIN:.*]]:2 = rnn.scan @tanh_state reverse inputs(%arg0 : tensor<?x3x4xf32>) init(%arg1, %[[T0]] : tensor<3x4xf32>, tensor<3x4xf32>)
// CHECK-SAME: lengths(%arg4
// CHECK: %[[T1:.*]] = rnn.tanh %[[FIN]]#0 : tensor<3x4xf32>
// CHECK: rnn.step @tanh_state inputs(%{{.*}} : tensor<3x4xf32>) states(%[[FIN]]#0, %[[T1]] : tensor<3x4xf32>, tensor<3x4xf32>)
rnn.cell @tanh_state inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>, %b: tensor<4xf32>) -> (tensor<?x4xf32>) {
  %th = rnn.tanh %h : tensor<?x4xf32>
  %u = rnn.matmul %th, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %u, %p : tensor<?x4xf32>, tensor<?x4xf32>
  %sb = rnn.add %s, %b : tensor<?x4xf32>, tensor<4xf32>
  %hn = rnn.sigmoid %sb : tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @run(%ps: tensor<?x3x4xf32>, %h0: tensor<3x4xf32>, %U: tensor<4x4xf32>, %b: tensor<4xf32>,
               %len: tensor<3xi32>) -> (tensor<?x3x4xf32>, tensor<3x4xf32>) {
  %ys, %hT = rnn.scan @tanh_state reverse inputs(%ps : tensor<?x3x4xf32>) init(%h0 : tensor<3x4xf32>)
      params(%U, %b : tensor<4x4xf32>, tensor<4xf32>) lengths(%len : tensor<3xi32>)
      -> outputs(tensor<?x3x4xf32>) states(tensor<3x4xf32>)
  %p1 = rnn.constant 0.5 : tensor<3x4xf32>
  %ys1, %h1 = rnn.step @tanh_state inputs(%p1 : tensor<3x4xf32>) states(%hT : tensor<3x4xf32>)
      params(%U, %b : tensor<4x4xf32>, tensor<4xf32>) -> outputs(tensor<3x4xf32>) states(tensor<3x4xf32>)
  return %ys, %h1 : tensor<?x3x4xf32>, tensor<3x4xf32>
}


// -----

// A function of two states and a parameter, (h⊙c⊙g)·Uᵀ: the same ops run
// on the new h and c before the yield, and on h0 and c0 at the scan.
// CHECK-LABEL: rnn.cell @two_states
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>, %[[C:[^:]*]]: tensor<?x4xf32>, %[[Q:[^:]*]]: tensor<?x4xf32>) params(%{{[^:]*}}: tensor<4x4xf32>, %[[G:[^:]*]]: tensor<4xf32>)
// CHECK: rnn.matmul %[[Q]],
// CHECK: %[[CN:.*]] = rnn.tanh
// CHECK: %[[HN:.*]] = rnn.mul %[[CN]], %[[H]]
// CHECK: %[[HC:.*]] = rnn.mul %[[HN]], %[[CN]]
// CHECK: %[[QN:.*]] = rnn.mul %[[HC]], %[[G]]
// CHECK: rnn.yield outputs(%[[HN]] : tensor<?x4xf32>) states(%[[HN]], %[[CN]], %[[QN]] :
// CHECK-LABEL: func.func @run2
// CHECK: %[[HC0:.*]] = rnn.mul %arg1, %arg2
// CHECK: %[[Q0:.*]] = rnn.mul %[[HC0]], %arg4
// CHECK: rnn.scan @two_states inputs(%arg0 : tensor<?x?x4xf32>) init(%arg1, %arg2, %[[Q0]] :
rnn.cell @two_states inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>, %g: tensor<4xf32>) -> (tensor<?x4xf32>) {
  %hc = rnn.mul %h, %c : tensor<?x4xf32>, tensor<?x4xf32>
  %hcg = rnn.mul %hc, %g : tensor<?x4xf32>, tensor<4xf32>
  %u = rnn.matmul %hcg, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %u, %p : tensor<?x4xf32>, tensor<?x4xf32>
  %cn = rnn.tanh %s : tensor<?x4xf32>
  %hn = rnn.mul %cn, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn, %cn : tensor<?x4xf32>, tensor<?x4xf32>)
}
func.func @run2(%ps: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %c0: tensor<?x4xf32>, %U: tensor<4x4xf32>, %g: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %ys, %hT:2 = rnn.scan @two_states inputs(%ps : tensor<?x?x4xf32>) init(%h0, %c0 : tensor<?x4xf32>, tensor<?x4xf32>)
      params(%U, %g : tensor<4x4xf32>, tensor<4xf32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>, tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}


// -----

// What must stay. x⊙h reads an input (it can only be computed in the
// step); h·Uᵀ reads the state itself; and where the new state is a matmul's
// result, tanh of it would be a kernel of its own after that matmul, so
// nothing is gained.
// CHECK-LABEL: rnn.cell @reads_input
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x4xf32>) params
// CHECK: rnn.mul
// CHECK-LABEL: rnn.cell @next_is_matmul
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x4xf32>) params
// CHECK: rnn.tanh
rnn.cell @reads_input inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %xh = rnn.mul %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %u = rnn.matmul %xh, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %v = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %u, %v : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.tanh %s : tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
rnn.cell @next_is_matmul inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %th = rnn.tanh %h : tensor<?x4xf32>
  %u = rnn.matmul %th, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %u, %x : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.matmul %s, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @run3(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %U: tensor<4x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %ys, %hT = rnn.scan @reads_input inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U : tensor<4x4xf32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %zs, %gT = rnn.scan @next_is_matmul inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U : tensor<4x4xf32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys, %zs : tensor<?x?x4xf32>, tensor<?x?x4xf32>
}
