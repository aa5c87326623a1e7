// RUN: rnn-opt %s -split-input-file --rnn-fuse-pointwise | FileCheck %s
// Idempotence: a second run finds nothing left to fuse.
// RUN: rnn-opt %s -split-input-file --rnn-fuse-pointwise --rnn-fuse-pointwise | FileCheck %s

// A two-stage cell (GRU reset-before): the projected input plus its bias is
// split into three gates and h·U_rzᵀ into two; the first stage needs r, the
// second z and the candidate's row. Every user of the projection's split
// gets its own split (and its own bias addition), so each group reads the
// pieces it needs from the projection and the bias at their offsets. The
// split of the product stays one: its one reader is the first group (the
// CUDA backend adds the product's K slices up in that kernel), which passes
// h·U_zᵀ through to the second.
// CHECK-LABEL: rnn.cell @two_stages
// CHECK: %[[U:.*]] = rnn.matmul %arg1, %arg3
// CHECK: %[[G1:.*]]:2 = rnn.pointwise(%[[U]], %[[U]][4], %arg0, %arg0[4], %arg0[8], %arg2, %arg2[4], %arg2[8], %arg1) : {{.*}} -> tensor<?x4xf32>, tensor<?x4xf32> {
// CHECK: rnn.pointwise_yield %{{.*}}, %{{.*}} : f32, f32
// CHECK: %[[N:.*]] = rnn.matmul %[[G1]]#1, %arg4
// CHECK: rnn.pointwise(%arg0, %arg0[4], %arg0[8], %arg2, %arg2[4], %arg2[8], %[[G1]]#0, %[[N]], %arg1)
// CHECK-NOT: rnn.split
rnn.cell @two_stages inputs(%p: tensor<?x12xf32>) states(%h: tensor<?x4xf32>)
    params(%b: tensor<12xf32>, %U: tensor<8x4xf32>, %U_n: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %pb = rnn.add %p, %b : tensor<?x12xf32>, tensor<12xf32>
  %x_r, %x_z, %x_n = rnn.split %pb : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %u = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %u_r, %u_z = rnn.split %u : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %r_pre = rnn.add %x_r, %u_r : tensor<?x4xf32>, tensor<?x4xf32>
  %r = rnn.sigmoid %r_pre : tensor<?x4xf32>
  %z_pre = rnn.add %x_z, %u_z : tensor<?x4xf32>, tensor<?x4xf32>
  %z = rnn.sigmoid %z_pre : tensor<?x4xf32>
  %rh = rnn.mul %r, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %un = rnn.matmul %rh, %U_n : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %n_pre = rnn.add %x_n, %un : tensor<?x4xf32>, tensor<?x4xf32>
  %n = rnn.tanh %n_pre : tensor<?x4xf32>
  %omz = rnn.sub %one, %z : tensor<f32>, tensor<?x4xf32>
  %a = rnn.mul %omz, %n : tensor<?x4xf32>, tensor<?x4xf32>
  %c = rnn.mul %z, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.add %a, %c : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}

// -----

// A split of a value that the first group computes with more than cheap
// arithmetic (a sigmoid) is not recomputed: the first group still writes the
// piece the second reads.
// CHECK-LABEL: rnn.cell @computed_once
// CHECK: %[[G1:.*]]:2 = rnn.pointwise(%arg0, %arg0[4], %arg1) : {{.*}} -> tensor<?x4xf32>, tensor<?x4xf32> {
// CHECK: %[[M:.*]] = rnn.matmul %[[G1]]#1, %arg2
// CHECK: rnn.pointwise(%[[M]], %[[G1]]#0)
rnn.cell @computed_once inputs(%p: tensor<?x8xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %s = rnn.sigmoid %p : tensor<?x8xf32>
  %s0, %s1 = rnn.split %s : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %a = rnn.mul %s0, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.matmul %a, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %hn = rnn.add %m, %s1 : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}

// -----

// Columns of one matmul's result yielded as they are (LSTMP's projection and
// its carried product): no group of copies; the pieces stay a split.
// CHECK-LABEL: rnn.cell @views
// CHECK: %[[M:.*]] = rnn.matmul
// CHECK-NEXT: %[[S:.*]]:2 = rnn.split %[[M]]
// CHECK-NOT: rnn.pointwise
// CHECK: rnn.yield outputs(%[[S]]#0 : tensor<?x4xf32>) states(%[[S]]#0, %[[S]]#1 : tensor<?x4xf32>, tensor<?x8xf32>)
rnn.cell @views inputs(%x: tensor<?x4xf32>) states(%r: tensor<?x4xf32>, %u: tensor<?x8xf32>)
    params(%W: tensor<12x4xf32>) -> (tensor<?x4xf32>) {
  %m = rnn.matmul %r, %W : tensor<?x4xf32>, tensor<12x4xf32> -> tensor<?x12xf32>
  %a, %b = rnn.split %m : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x8xf32>
  rnn.yield outputs(%a : tensor<?x4xf32>) states(%a, %b : tensor<?x4xf32>, tensor<?x8xf32>)
}

// -----

// A state yielded unchanged as an output (the training forward's saved
// c_{t-1}) that a group reads whole: the group writes it as a result of its
// own, which the cell yields instead (no copy of the state buffer that the
// group rewrites in place). The state's new value still comes from the
// group.
// CHECK-LABEL: rnn.cell @saved_state
// CHECK: %[[G:.*]]:2 = rnn.pointwise(%arg0, %arg1) : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x4xf32> {
// CHECK: ^bb0(%[[X:.*]]: f32, %[[C:.*]]: f32):
// CHECK: rnn.pointwise_yield %{{.*}}, %[[C]] : f32, f32
// CHECK: rnn.yield outputs(%[[G]]#0, %[[G]]#1 : tensor<?x4xf32>, tensor<?x4xf32>) states(%[[G]]#0 : tensor<?x4xf32>)
rnn.cell @saved_state inputs(%x: tensor<?x4xf32>) states(%c: tensor<?x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %s = rnn.add %x, %c : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  rnn.yield outputs(%t, %c : tensor<?x4xf32>, tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}

// -----

// A state yielded as an output that no group reads whole (only a window
// of it) stays a block argument of the yield.
// CHECK-LABEL: rnn.cell @window_only
// CHECK: rnn.yield outputs(%{{.*}}, %arg1 : tensor<?x2xf32>, tensor<?x4xf32>)
rnn.cell @window_only inputs(%x: tensor<?x2xf32>) states(%c: tensor<?x4xf32>)
    -> (tensor<?x2xf32>, tensor<?x4xf32>) {
  %a, %b = rnn.split %c : tensor<?x4xf32> -> tensor<?x2xf32>, tensor<?x2xf32>
  %s = rnn.add %x, %b : tensor<?x2xf32>, tensor<?x2xf32>
  %t = rnn.tanh %s : tensor<?x2xf32>
  %n = rnn.concat %t, %t : tensor<?x2xf32>, tensor<?x2xf32> -> tensor<?x4xf32>
  rnn.yield outputs(%t, %c : tensor<?x2xf32>, tensor<?x4xf32>) states(%n : tensor<?x4xf32>)
}
