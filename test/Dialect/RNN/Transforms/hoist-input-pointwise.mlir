// RUN: rnn-opt %s -split-input-file --rnn-hoist-input-projection --rnn-hoist-input-pointwise --allow-unregistered-dialect | FileCheck %s
// Idempotence: a second run finds nothing more to move.
// RUN: rnn-opt %s -split-input-file --rnn-hoist-input-projection --rnn-hoist-input-pointwise --rnn-hoist-input-pointwise --allow-unregistered-dialect | FileCheck %s

// The issue's cell. z = sigmoid(x·W_zᵀ + b_z) and tanh(x) read the input
// alone: both run once over the whole sequence and enter the cell as
// per-step inputs, next to the projection that r needs; x itself no longer
// crosses. 1 - z stays: a subtraction costs nothing in the fused group. The
// reverse scan keeps its direction and lengths: the hoisted rows are indexed
// as the input's.
// CHECK-LABEL: rnn.cell @mut1
// CHECK-SAME: inputs(%[[PR:[^:]*]]: tensor<?x4xf32>, %[[Z:[^:]*]]: tensor<?x4xf32>, %[[TX:[^:]*]]: tensor<?x4xf32>)
// CHECK-SAME: states(%[[H:[^:]*]]: tensor<?x4xf32>)
// CHECK: %[[HR:.*]] = rnn.matmul %[[H]]
// CHECK: rnn.add %[[PR]], %[[HR]]
// CHECK: rnn.sigmoid
// CHECK: rnn.add %{{.*}}, %[[TX]]
// CHECK: rnn.mul %{{.*}}, %[[Z]]
// CHECK: rnn.sub %{{.*}}, %[[Z]]
// CHECK-LABEL: func.func @run_mut1
// CHECK-SAME: (%[[XS:[^:]*]]: tensor<?x?x4xf32>
// CHECK-DAG: %[[PZS:.*]] = rnn.matmul %[[XS]], %{{.*}} : tensor<?x?x4xf32>, tensor<4x4xf32> -> tensor<?x?x4xf32>
// CHECK-DAG: %[[PRS:.*]] = rnn.matmul %[[XS]], %{{.*}} : tensor<?x?x4xf32>, tensor<4x4xf32> -> tensor<?x?x4xf32>
// CHECK: %[[ZP:.*]] = rnn.add %[[PZS]], %{{.*}} : tensor<?x?x4xf32>, tensor<4xf32>
// CHECK: %[[ZS:.*]] = rnn.sigmoid %[[ZP]] : tensor<?x?x4xf32>
// CHECK: %[[TS:.*]] = rnn.tanh %[[XS]] : tensor<?x?x4xf32>
// CHECK: rnn.scan @mut1 reverse inputs(%[[PRS]], %[[ZS]], %[[TS]] : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>)
// CHECK-SAME: lengths(
rnn.cell @mut1 inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%W_z: tensor<4x4xf32>, %b_z: tensor<4xf32>, %W_r: tensor<4x4xf32>,
           %U_r: tensor<4x4xf32>, %b_r: tensor<4xf32>, %U_h: tensor<4x4xf32>,
           %b_h: tensor<4xf32>) -> (tensor<?x4xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %xz = rnn.matmul %x, %W_z : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %zp = rnn.add %xz, %b_z : tensor<?x4xf32>, tensor<4xf32>
  %z = rnn.sigmoid %zp : tensor<?x4xf32>
  %xr = rnn.matmul %x, %W_r : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %hr = rnn.matmul %h, %U_r : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %rs = rnn.add %xr, %hr : tensor<?x4xf32>, tensor<?x4xf32>
  %rp = rnn.add %rs, %b_r : tensor<?x4xf32>, tensor<4xf32>
  %r = rnn.sigmoid %rp : tensor<?x4xf32>
  %rh = rnn.mul %r, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %u = rnn.matmul %rh, %U_h : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %tx = rnn.tanh %x : tensor<?x4xf32>
  %s1 = rnn.add %u, %tx : tensor<?x4xf32>, tensor<?x4xf32>
  %s2 = rnn.add %s1, %b_h : tensor<?x4xf32>, tensor<4xf32>
  %c = rnn.tanh %s2 : tensor<?x4xf32>
  %cz = rnn.mul %c, %z : tensor<?x4xf32>, tensor<?x4xf32>
  %omz = rnn.sub %one, %z : tensor<f32>, tensor<?x4xf32>
  %hz = rnn.mul %h, %omz : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.add %cz, %hz : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @run_mut1(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>,
                    %W_z: tensor<4x4xf32>, %b_z: tensor<4xf32>, %W_r: tensor<4x4xf32>,
                    %U_r: tensor<4x4xf32>, %b_r: tensor<4xf32>, %U_h: tensor<4x4xf32>,
                    %b_h: tensor<4xf32>, %len: tensor<?xi32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @mut1 reverse inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W_z, %b_z, %W_r, %U_r, %b_r, %U_h, %b_h : tensor<4x4xf32>, tensor<4xf32>,
             tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// Pieces of an input-only value: the loop reads columns of sigmoid(p), so
// sigmoid(p) crosses whole and the split stays in the cell (in the fused
// group it is a choice of columns; over the sequence it would be a copy).
// The projection's own split stays too: tanh of one piece is hoisted,
// reading the split of the projected sequence, and the projection crosses
// for the other piece.
// CHECK-LABEL: rnn.cell @pieces
// CHECK-SAME: inputs(%[[P:[^:]*]]: tensor<?x8xf32>, %[[SP:[^:]*]]: tensor<?x8xf32>, %[[T0:[^:]*]]: tensor<?x4xf32>)
// CHECK-NOT: rnn.sigmoid
// CHECK: rnn.split %[[SP]]
// CHECK: rnn.split %[[P]]
// CHECK-NOT: rnn.tanh
// CHECK: rnn.mul %[[T0]], %{{.*}}
// CHECK-LABEL: func.func @run_pieces
// CHECK: %[[PS:.*]] = rnn.matmul
// CHECK: %[[SIG:.*]] = rnn.sigmoid %[[PS]] : tensor<5x?x8xf32>
// CHECK: %[[PIECES:.*]]:2 = rnn.split %[[PS]] : tensor<5x?x8xf32> -> tensor<5x?x4xf32>, tensor<5x?x4xf32>
// CHECK: %[[T:.*]] = rnn.tanh %[[PIECES]]#0 : tensor<5x?x4xf32>
// CHECK: rnn.scan @pieces inputs(%[[PS]], %[[SIG]], %[[T]] :
rnn.cell @pieces inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<8x3xf32>) -> (tensor<?x4xf32>) {
  %p = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<8x3xf32> -> tensor<?x8xf32>
  %s = rnn.sigmoid %p : tensor<?x8xf32>
  %s0, %s1 = rnn.split %s : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %p0, %p1 = rnn.split %p : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %t0 = rnn.tanh %p0 : tensor<?x4xf32>
  %a = rnn.mul %s0, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %b = rnn.mul %t0, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %c = rnn.add %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %d = rnn.add %c, %p1 : tensor<?x4xf32>, tensor<?x4xf32>
  %e = rnn.mul %d, %s1 : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%e : tensor<?x4xf32>) states(%e : tensor<?x4xf32>)
}
func.func @run_pieces(%xs: tensor<5x?x3xf32>, %h0: tensor<?x4xf32>, %W: tensor<8x3xf32>) -> tensor<5x?x4xf32> {
  %ys, %hT = rnn.scan @pieces inputs(%xs : tensor<5x?x3xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W : tensor<8x3xf32>) -> outputs(tensor<5x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<5x?x4xf32>
}

// -----

// What must stay. A bias addition of the input (cheap: it costs nothing in
// the fused group) stays; so does a layer normalisation of the input (row
// reductions are not fused outside a cell), tanh included; a tanh of the
// state is no input-only value. An output that is tanh(x) is hoisted (the
// yield reads it), and at an rnn.step it is computed on the step's rows.
// CHECK-LABEL: rnn.cell @mixed
// CHECK-SAME: inputs(%[[X:[^:]*]]: tensor<?x4xf32>, %[[T:[^:]*]]: tensor<?x4xf32>) states(%[[H:[^:]*]]: tensor<?x4xf32>)
// CHECK: %[[XB:.*]] = rnn.add %[[X]], %{{.*}} : tensor<?x4xf32>, tensor<4xf32>
// CHECK: rnn.layer_norm %[[X]]
// CHECK: rnn.tanh %[[H]]
// CHECK: rnn.yield outputs(%{{.*}}, %[[T]] : tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-LABEL: func.func @run_mixed
// CHECK: %[[TS:.*]] = rnn.tanh %arg0 : tensor<?x?x4xf32>
// CHECK: rnn.scan @mixed inputs(%arg0, %[[TS]] : tensor<?x?x4xf32>, tensor<?x?x4xf32>)
// CHECK: %[[T1:.*]] = rnn.tanh %arg3 : tensor<2x4xf32>
// CHECK: rnn.step @mixed inputs(%arg3, %[[T1]] : tensor<2x4xf32>, tensor<2x4xf32>)
rnn.cell @mixed inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%b: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %xb = rnn.add %x, %b : tensor<?x4xf32>, tensor<4xf32>
  %ln = rnn.layer_norm %x : tensor<?x4xf32>
  %tln = rnn.tanh %ln : tensor<?x4xf32>
  %th = rnn.tanh %h : tensor<?x4xf32>
  %s0 = rnn.add %xb, %th : tensor<?x4xf32>, tensor<?x4xf32>
  %s = rnn.add %s0, %tln : tensor<?x4xf32>, tensor<?x4xf32>
  %tx = rnn.tanh %x : tensor<?x4xf32>
  rnn.yield outputs(%s, %tx : tensor<?x4xf32>, tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @run_mixed(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %b: tensor<4xf32>,
                     %x: tensor<2x4xf32>, %h: tensor<2x4xf32>) -> (tensor<?x?x4xf32>, tensor<2x4xf32>) {
  %ys, %ts, %hT = rnn.scan @mixed inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%b : tensor<4xf32>) -> outputs(tensor<?x?x4xf32>, tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %y1, %t1, %h1 = rnn.step @mixed inputs(%x : tensor<2x4xf32>) states(%h : tensor<2x4xf32>)
      params(%b : tensor<4xf32>) -> outputs(tensor<2x4xf32>, tensor<2x4xf32>) states(tensor<2x4xf32>)
  return %ys, %h1 : tensor<?x?x4xf32>, tensor<2x4xf32>
}

// -----

// A cell whose symbol has another user keeps its signature: nothing moves.
// CHECK-LABEL: rnn.cell @pinned
// CHECK: rnn.tanh %arg0
rnn.cell @pinned inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %tx = rnn.tanh %x : tensor<?x4xf32>
  %s = rnn.add %tx, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @run_pinned(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @pinned inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  "test.uses_cell"() {cell = @pinned} : () -> ()
  return %ys : tensor<?x?x4xf32>
}
