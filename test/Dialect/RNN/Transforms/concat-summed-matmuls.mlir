// RUN: rnn-opt %s -split-input-file --rnn-concat-summed-matmuls --allow-unregistered-dialect | FileCheck %s
// Idempotence: a merged product is the only one of its sum.
// RUN: rnn-opt %s -split-input-file --rnn-concat-summed-matmuls --rnn-concat-summed-matmuls --allow-unregistered-dialect | FileCheck %s

// Two states read through matrices of their own: h·Uᵀ + c·Vᵀ is one product
// over [h, c] with the weights concatenated along K (axis 1 of [N, K]),
// packed once per call before the scan. The input's product stays for
// rnn-hoist-input-projection.
// CHECK-LABEL: rnn.cell @two_states
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>, %[[C:[^:]*]]: tensor<?x3xf32>)
// CHECK-SAME: params(%[[W:[^:]*]]: tensor<4x2xf32>, %[[UV:[^:]*]]: tensor<4x7xf32>)
// CHECK: %[[XW:.*]] = rnn.matmul %arg0, %[[W]]
// CHECK: %[[HC:.*]] = rnn.concat %[[H]], %[[C]] : tensor<?x4xf32>, tensor<?x3xf32> -> tensor<?x7xf32>
// CHECK: %[[P:.*]] = rnn.matmul %[[HC]], %[[UV]] : tensor<?x7xf32>, tensor<4x7xf32> -> tensor<?x4xf32>
// CHECK: %[[S:.*]] = rnn.add %[[XW]], %[[P]]
// CHECK: rnn.tanh %[[S]]
// CHECK-NOT: rnn.matmul
// CHECK-LABEL: func.func @run_two_states
// CHECK: %[[PACKED:.*]] = rnn.concat %arg4, %arg5 axis 1 : tensor<4x4xf32>, tensor<4x3xf32> -> tensor<4x7xf32>
// CHECK: rnn.scan @two_states {{.*}} params(%arg3, %[[PACKED]] :
rnn.cell @two_states inputs(%x: tensor<?x2xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x3xf32>)
    params(%W: tensor<4x2xf32>, %U: tensor<4x4xf32>, %V: tensor<4x3xf32>) -> (tensor<?x4xf32>) {
  %xw = rnn.matmul %x, %W : tensor<?x2xf32>, tensor<4x2xf32> -> tensor<?x4xf32>
  %hu = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %cv = rnn.matmul %c, %V : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %s0 = rnn.add %xw, %hu : tensor<?x4xf32>, tensor<?x4xf32>
  %s = rnn.add %s0, %cv : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.tanh %s : tensor<?x4xf32>
  %cn, %cr = rnn.split %hn : tensor<?x4xf32> -> tensor<?x3xf32>, tensor<?x1xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn, %cn : tensor<?x4xf32>, tensor<?x3xf32>)
}
func.func @run_two_states(%xs: tensor<?x?x2xf32>, %h0: tensor<?x4xf32>, %c0: tensor<?x3xf32>,
                          %W: tensor<4x2xf32>, %U: tensor<4x4xf32>, %V: tensor<4x3xf32>) -> tensor<?x?x4xf32> {
  %ys, %hT, %cT = rnn.scan @two_states inputs(%xs : tensor<?x?x2xf32>) init(%h0, %c0 : tensor<?x4xf32>, tensor<?x3xf32>)
      params(%W, %U, %V : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x3xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>, tensor<?x3xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// Gate feedback: a and b come out of the first stage; a·R_aᵀ + b·R_bᵀ runs
// in the second as one product over [a, b]. Two gates that read the same
// operands share one concatenation (rnn-concat-gate-matmuls then merges
// their products along N). h·Uᵀ, ready at the start of the step, is not
// moved into the second stage: it stays a product of its own.
// CHECK-LABEL: rnn.cell @feedback
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>)
// CHECK: %[[A:.*]] = rnn.sigmoid
// CHECK: %[[B:.*]] = rnn.sigmoid
// CHECK: %[[HU:.*]] = rnn.matmul %[[H]], %{{.*}} : tensor<?x4xf32>, tensor<4x4xf32>
// CHECK: %[[AB:.*]] = rnn.concat %[[A]], %[[B]] : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
// CHECK: %[[P:.*]] = rnn.matmul %[[AB]], %{{.*}} : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
// CHECK: rnn.add %[[HU]], %[[P]]
// CHECK-NOT: rnn.concat
// CHECK: %[[Q:.*]] = rnn.matmul %[[AB]], %{{.*}} : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
// CHECK: rnn.tanh %[[Q]]
rnn.cell @feedback inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%Ua: tensor<4x4xf32>, %Ub: tensor<4x4xf32>, %U: tensor<4x4xf32>,
           %Ra: tensor<4x4xf32>, %Rb: tensor<4x4xf32>, %Qa: tensor<4x4xf32>, %Qb: tensor<4x4xf32>)
    -> (tensor<?x4xf32>) {
  %ha = rnn.matmul %h, %Ua : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %a = rnn.sigmoid %ha : tensor<?x4xf32>
  %hb = rnn.matmul %h, %Ub : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %b = rnn.sigmoid %hb : tensor<?x4xf32>
  %hu = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %ar = rnn.matmul %a, %Ra : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %br = rnn.matmul %b, %Rb : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s0 = rnn.add %hu, %ar : tensor<?x4xf32>, tensor<?x4xf32>
  %s = rnn.add %s0, %br : tensor<?x4xf32>, tensor<?x4xf32>
  %aq = rnn.matmul %a, %Qa : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %bq = rnn.matmul %b, %Qb : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %t = rnn.add %aq, %bq : tensor<?x4xf32>, tensor<?x4xf32>
  %g = rnn.tanh %t : tensor<?x4xf32>
  %hn = rnn.mul %s, %g : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}

// -----

// With weight_in_out the weights are [K, N]: concatenated along axis 0.
// CHECK-LABEL: rnn.cell @in_out
// CHECK: %[[HC:.*]] = rnn.concat %arg1, %arg2 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
// CHECK: rnn.matmul %[[HC]], %{{.*}} weight_in_out : tensor<?x8xf32>, tensor<8x4xf32> -> tensor<?x4xf32>
// CHECK-LABEL: func.func @run_in_out
// CHECK: rnn.concat %arg3, %arg4 axis 0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
rnn.cell @in_out inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>, %V: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %hu = rnn.matmul %h, %U weight_in_out : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %cv = rnn.matmul %c, %V weight_in_out : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s0 = rnn.add %hu, %cv : tensor<?x4xf32>, tensor<?x4xf32>
  %s = rnn.add %s0, %x : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s, %s : tensor<?x4xf32>, tensor<?x4xf32>)
}
func.func @run_in_out(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %c0: tensor<?x4xf32>,
                      %U: tensor<4x4xf32>, %V: tensor<4x4xf32>) -> tensor<?x?x4xf32> {
  %ys, %hT, %cT = rnn.scan @in_out inputs(%xs : tensor<?x?x4xf32>) init(%h0, %c0 : tensor<?x4xf32>, tensor<?x4xf32>)
      params(%U, %V : tensor<4x4xf32>, tensor<4x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>, tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// What stays: products that differ in allow_tf32, a product read outside the
// sum, a product that accumulates, a product of the input alone, and two
// products of one operand (rnn-concat-gate-matmuls' case).
// CHECK-LABEL: rnn.cell @negative
// CHECK-NOT: rnn.concat
// CHECK-COUNT-7: rnn.matmul
// CHECK-NOT: rnn.concat
rnn.cell @negative inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>, %V: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %hu = rnn.matmul %h, %U allow_tf32 : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %cv = rnn.matmul %c, %V : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s1 = rnn.add %hu, %cv : tensor<?x4xf32>, tensor<?x4xf32>
  %hu2 = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %cv2 = rnn.matmul %c, %V : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s2 = rnn.add %hu2, %cv2 : tensor<?x4xf32>, tensor<?x4xf32>
  %r = rnn.mul %s2, %cv2 : tensor<?x4xf32>, tensor<?x4xf32>
  %hu3 = rnn.matmul %h, %U acc %x : tensor<?x4xf32>, tensor<4x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %xv = rnn.matmul %x, %V : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %cv3 = rnn.matmul %c, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s3 = rnn.add %hu3, %xv : tensor<?x4xf32>, tensor<?x4xf32>
  %s4 = rnn.add %s3, %cv3 : tensor<?x4xf32>, tensor<?x4xf32>
  %s5 = rnn.add %s4, %s1 : tensor<?x4xf32>, tensor<?x4xf32>
  %s6 = rnn.add %s5, %r : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s6 : tensor<?x4xf32>) states(%s6, %s6 : tensor<?x4xf32>, tensor<?x4xf32>)
}
