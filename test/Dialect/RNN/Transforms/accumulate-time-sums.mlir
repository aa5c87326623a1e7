// RUN: rnn-opt %s -split-input-file --rnn-accumulate-time-sums | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-accumulate-time-sums --rnn-accumulate-time-sums | FileCheck %s

// A gain's gradient factor that only a sum over time reads (a layer norm's
// gain in a backward) is added to a carried [B, N] accumulator that starts
// at zero; the sequence is no longer an output and the sum after the loop
// reads the final accumulator. The gate gradients, which a matmul reads
// too, stay an output.
// CHECK-LABEL: rnn.cell @gain_gradient
// CHECK-SAME: states(%[[DH:.*]]: tensor<?x4xf32>, %[[ACC:.*]]: tensor<?x8xf32>)
// CHECK-SAME: -> (tensor<?x8xf32>) {
// CHECK: %[[D:.*]] = rnn.mul %{{.*}}, %[[N:[^ ]*]] :
// CHECK: %[[NEXT:.*]] = rnn.add %[[ACC]], %[[D]] : tensor<?x8xf32>, tensor<?x8xf32>
// CHECK: rnn.yield outputs(%[[G:.*]] : tensor<?x8xf32>) states(%{{.*}}, %[[NEXT]] : tensor<?x4xf32>, tensor<?x8xf32>)
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%{{[^:]*}}: tensor<?x?x4xf32>, %{{[^:]*}}: tensor<?x?x8xf32>, %[[DH0:[^:]*]]: tensor<?x4xf32>
// CHECK: %[[Z:.*]] = rnn.zeros_like %[[DH0]] : tensor<?x4xf32>
// CHECK: %[[COLUMN:.*]] = rnn.sum_to %[[Z]] : tensor<?x4xf32> -> tensor<?x1xf32>
// CHECK: %[[ZERO:.*]] = rnn.constant 0.000000e+00 : tensor<8xf32>
// CHECK: %[[INIT:.*]] = rnn.add %[[COLUMN]], %[[ZERO]] : tensor<?x1xf32>, tensor<8xf32>
// CHECK: %[[SEQ:[^,]*]], %{{.*}}:2 = rnn.scan @gain_gradient reverse
// CHECK-SAME: init(%[[DH0]], %[[INIT]] : tensor<?x4xf32>, tensor<?x8xf32>)
// CHECK-SAME: -> outputs(tensor<?x?x8xf32>) states(tensor<?x4xf32>, tensor<?x8xf32>)
// CHECK: rnn.outer_sum %[[SEQ]]
// CHECK: rnn.sum_to %[[SEQ]] : tensor<?x?x8xf32> -> tensor<8xf32>
// CHECK: rnn.sum_to %{{.*}}#1 : tensor<?x8xf32> -> tensor<8xf32>
rnn.cell @gain_gradient inputs(%dy: tensor<?x4xf32>, %n: tensor<?x8xf32>) states(%dh: tensor<?x4xf32>)
    params(%U: tensor<8x4xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = rnn.concat %dy, %dh : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %g = rnn.tanh %s : tensor<?x8xf32>
  %d = rnn.mul %g, %n : tensor<?x8xf32>, tensor<?x8xf32>
  %dhn = rnn.matmul %g, %U weight_in_out : tensor<?x8xf32>, tensor<8x4xf32> -> tensor<?x4xf32>
  rnn.yield outputs(%g, %d : tensor<?x8xf32>, tensor<?x8xf32>) states(%dhn : tensor<?x4xf32>)
}
func.func @backward(%dys: tensor<?x?x4xf32>, %ns: tensor<?x?x8xf32>, %dh: tensor<?x4xf32>,
                    %U: tensor<8x4xf32>, %hs: tensor<?x?x4xf32>)
    -> (tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>) {
  %gs, %ds, %dh0 = rnn.scan @gain_gradient reverse inputs(%dys, %ns : tensor<?x?x4xf32>, tensor<?x?x8xf32>)
      init(%dh : tensor<?x4xf32>) params(%U : tensor<8x4xf32>)
      -> outputs(tensor<?x?x8xf32>, tensor<?x?x8xf32>) states(tensor<?x4xf32>)
  %dU = rnn.outer_sum %gs, %hs : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<8x4xf32>
  %db = rnn.sum_to %gs : tensor<?x?x8xf32> -> tensor<8xf32>
  %dgain = rnn.sum_to %ds : tensor<?x?x8xf32> -> tensor<8xf32>
  return %dU, %db, %dgain : tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A bf16 backward rounds its factors to bf16 and sums them in f32: the
// accumulator is f32 and adds the rounded values; two sums of the output
// (to [N] and to [B, N]) both read it. Lengths leave the rewrite valid.
// CHECK-LABEL: rnn.cell @rounded
// CHECK-SAME: states(%{{.*}}: tensor<?x4xf32>, %[[ACC:.*]]: tensor<?x4xf32>)
// CHECK-SAME: -> (tensor<?x4xf32>) {
// CHECK: %[[R:.*]] = rnn.cast %[[Y:.*]] : tensor<?x4xf32> to tensor<?x4xbf16>
// CHECK: %[[W:.*]] = rnn.cast %[[R]] : tensor<?x4xbf16> to tensor<?x4xf32>
// CHECK: %[[NEXT:.*]] = rnn.add %[[ACC]], %[[W]]
// CHECK: rnn.yield outputs(%[[Y]] : tensor<?x4xf32>) states(%[[Y]], %[[NEXT]] :
// CHECK-LABEL: func.func @run
// CHECK: %[[YS:[^,]*]], %[[FINAL:.*]]:2 = rnn.scan @rounded
// CHECK-SAME: lengths
// CHECK-NOT: rnn.cast
// CHECK: rnn.sum_to %[[FINAL]]#1 : tensor<?x4xf32> -> tensor<4xf32>
// CHECK: rnn.sum_to %[[FINAL]]#1 : tensor<?x4xf32> -> tensor<?x4xf32>
rnn.cell @rounded inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y, %y : tensor<?x4xf32>, tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %len: tensor<?xi32>)
    -> (tensor<?x?x4xf32>, tensor<4xf32>, tensor<?x4xf32>) {
  %ys:2, %hT = rnn.scan @rounded inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      lengths(%len : tensor<?xi32>) -> outputs(tensor<?x?x4xf32>, tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %r = rnn.cast %ys#1 : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  %s = rnn.sum_to %r : tensor<?x?x4xbf16> -> tensor<4xf32>
  %sb = rnn.sum_to %r : tensor<?x?x4xbf16> -> tensor<?x4xf32>
  return %ys#0, %s, %sb : tensor<?x?x4xf32>, tensor<4xf32>, tensor<?x4xf32>
}

// -----

// Left alone: a sum that keeps the time dimension, an output read by
// something else as well, an output with no reader, and the last output
// (a scan's outputs give its sequences their length).
// CHECK-LABEL: rnn.cell @kept
// CHECK-SAME: states(%{{.*}}: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
// CHECK-LABEL: rnn.cell @last
// CHECK-SAME: states(%{{.*}}: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
rnn.cell @kept inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %z = rnn.tanh %y : tensor<?x4xf32>
  rnn.yield outputs(%y, %z, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
rnn.cell @last inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>)
    -> (tensor<1x1x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %ys:3, %hT = rnn.scan @kept inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %keep_t = rnn.sum_to %ys#0 : tensor<?x?x4xf32> -> tensor<1x1x4xf32>
  %s = rnn.sum_to %ys#1 : tensor<?x?x4xf32> -> tensor<4xf32>
  %zs, %zT = rnn.scan @last inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %t = rnn.sum_to %zs : tensor<?x?x4xf32> -> tensor<4xf32>
  return %keep_t, %ys#1, %s, %t : tensor<1x1x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A cell that an rnn.step applies is left alone.
// CHECK-LABEL: rnn.cell @stepped
// CHECK-SAME: states(%{{.*}}: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
rnn.cell @stepped inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y, %y : tensor<?x4xf32>, tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @run(%x: tensor<?x4xf32>, %h0: tensor<?x4xf32>) -> (tensor<4xf32>, tensor<?x4xf32>) {
  %y:2, %h = rnn.step @stepped inputs(%x : tensor<?x4xf32>) states(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x4xf32>, tensor<?x4xf32>) states(tensor<?x4xf32>)
  %s = rnn.sum_to %y#0 : tensor<?x4xf32> -> tensor<4xf32>
  return %s, %y#1 : tensor<4xf32>, tensor<?x4xf32>
}
