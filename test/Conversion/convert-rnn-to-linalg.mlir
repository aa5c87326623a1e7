// RUN: rnn-opt %s -split-input-file --convert-rnn-to-linalg | FileCheck %s

// A scan is a loop over time around the inlined cell; the matmul is a marked
// contraction; nothing of the rnn dialect is left. The state h is carried in
// its own tensor and computed into it; it is also the output, so the step's
// generic writes it a second time, into its row of the output sequence (a
// second output of the generic, inserted back where it was taken from):
// bufferization then updates both in place and copies neither. Arguments
// belong to the caller: not writable.
// CHECK-LABEL: func.func @elman
// CHECK-SAME: %arg1: tensor<?x4xf32> {bufferization.writable = false}
// CHECK-NOT: rnn.
// CHECK: %[[T:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[EMPTY:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x4xf32>
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[I:.*]] = %c0{{.*}} to %[[T]] step %c1{{.*}} iter_args(%[[H:.*]] = %arg1, %[[YS:.*]] = %[[EMPTY]])
// CHECK: tensor.extract_slice %arg0[%[[I]], 0, 0]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: rnn.gemm_weight_layout = 0 : i32
// CHECK: linalg.generic {{.*}} ins(%[[H]], %arg3
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[YS]][%[[I]], 0, 0]
// CHECK: %[[HN:.*]]:2 = linalg.generic {{.*}} outs(%[[H]], %[[ROW]] : tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK: %[[V:.*]] = math.tanh
// CHECK: linalg.yield %[[V]], %[[V]] : f32, f32
// CHECK: %[[BACK:.*]] = tensor.insert_slice %[[HN]]#1 into %[[YS]][%[[I]], 0, 0]
// CHECK: scf.yield %[[HN]]#0, %[[BACK]]
// CHECK: return %[[LOOP]]#1, %[[LOOP]]#0
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
// Every op of the group carries the same row-group mark.
// CHECK-LABEL: func.func @group_with_reduction
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-SAME: rnn.row_group = 0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: rnn.row_group = 0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-SAME: rnn.row_group = 0
// CHECK: arith.divf
// CHECK-NOT: rnn.pointwise
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

// A reduction of a group input sums the input's window itself: no phase
// copies the input into a tensor first, and the phase after it reads the
// window, not a copy. A second group in the function gets the next mark.
// CHECK-LABEL: func.func @reduce_an_input
// CHECK: %[[WIN:.*]] = tensor.extract_slice %arg0[0, 4]
// CHECK-NOT: linalg.generic
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[WIN]] :
// CHECK-SAME: rnn.row_group = 0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[WIN]], %{{[0-9]+}} :
// CHECK-SAME: rnn.row_group = 0
// CHECK-NOT: linalg.generic {{.*}}rnn.row_group = 0
// CHECK: rnn.row_group = 1
func.func @reduce_an_input(%x: tensor<?x8xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %r = rnn.pointwise(%x[4]) : tensor<?x8xf32> -> tensor<?x4xf32> {
  ^bb0(%a: f32):
    %sum = rnn.row_sum %a : f32
    %n = arith.divf %a, %sum : f32
    rnn.pointwise_yield %n : f32
  }
  %q = rnn.pointwise(%r) : tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%a: f32):
    %m = rnn.row_max %a : f32
    %n = arith.subf %a, %m : f32
    rnn.pointwise_yield %n : f32
  }
  return %r, %q : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A yielded block argument (a state saved as the step found it) is written by
// the last phase that reads it: the generic that computes the new state
// from it, not a copy of its own in the first phase.
// CHECK-LABEL: func.func @saved_input_in_its_last_reading_phase
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0 :
// CHECK: %[[LAST:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%arg1, %{{[0-9]+}} :
// CHECK: linalg.yield %in, %{{.*}} : f32, f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[LAST]]#{{[01]}}, %[[LAST]]#{{[01]}}
func.func @saved_input_in_its_last_reading_phase(%x: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %r:2 = rnn.pointwise(%x, %c) : tensor<?x4xf32>, tensor<?x4xf32>
      -> tensor<?x4xf32>, tensor<?x4xf32> {
  ^bb0(%a: f32, %b: f32):
    %sum = rnn.row_sum %a : f32
    %n = arith.mulf %b, %sum : f32
    rnn.pointwise_yield %n, %b : f32, f32
  }
  return %r#0, %r#1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// An output that is the step's input row, yielded unchanged (a training
// forward saving the hoisted input projection), is the input sequence: the
// loop carries no sequence for it and copies nothing. With lengths (zeros
// past a row's length) the loop writes it.
// CHECK-LABEL: func.func @input_passed_through
// CHECK: %[[L:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %arg1, %{{.*}} = %{{.*}}) -> (tensor<?x4xf32>, tensor<?x?x4xf32>)
// CHECK: return %[[L]]#1, %arg0, %[[L]]#0
// CHECK-LABEL: func.func @input_passed_through_lengths
// CHECK: %[[M:.*]]:3 = scf.for {{.*}} -> (tensor<?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>)
// CHECK: return %[[M]]#1, %[[M]]#2, %[[M]]#0
rnn.cell @saves_input inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %hn = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn, %x : tensor<?x4xf32>, tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @input_passed_through(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4xf32>) {
  %ys, %xs2, %hT = rnn.scan @saves_input inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>, tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys, %xs2, %hT : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4xf32>
}
func.func @input_passed_through_lengths(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %len: tensor<?xi32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4xf32>) {
  %ys, %xs2, %hT = rnn.scan @saves_input inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x4xf32>, tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys, %xs2, %hT : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4xf32>
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

// -----

// Every state is computed into its loop-carried tensor, which bufferization
// can then update in place; in a reverse scan step I runs position
// T - 1 - I, and the output row it writes is that position.
// CHECK-LABEL: func.func @two_states_reverse
// CHECK: scf.for %[[I:.*]] = {{.*}} iter_args(%[[H:.*]] = %arg1, %[[C:.*]] = %arg2, %[[YS:.*]] = %{{.*}})
// CHECK: %[[POS:.*]] = arith.subi %{{.*}}, %[[I]]
// CHECK: %[[CN:.*]] = linalg.generic {{.*}} outs(%[[C]] : tensor<?x4xf32>)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[YS]][%[[POS]], 0, 0]
// CHECK: %[[HN:.*]]:2 = linalg.generic {{.*}} outs(%[[H]], %[[ROW]] :
// CHECK: %[[BACK:.*]] = tensor.insert_slice %[[HN]]#1 into %[[YS]][%[[POS]], 0, 0]
// CHECK: scf.yield %[[HN]]#0, %[[CN]], %[[BACK]]
rnn.cell @acc2 inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %cn = rnn.add %x, %c : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.mul %cn, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn, %cn : tensor<?x4xf32>, tensor<?x4xf32>)
}
func.func @two_states_reverse(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %c0: tensor<?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %ys, %hT, %cT = rnn.scan @acc2 reverse inputs(%xs : tensor<?x?x4xf32>) init(%h0, %c0 : tensor<?x4xf32>, tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>, tensor<?x4xf32>)
  return %ys, %hT, %cT : tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A matmul accumulating onto the projected input row: the contraction's
// init is the row itself (no zero fill), and the projection sequence is
// carried through the loop with the accumulated row written back where it
// was read, so that bufferization updates it in place.
// CHECK-LABEL: func.func @accumulating
// CHECK: scf.for %[[I:.*]] = {{.*}} iter_args(%{{.*}} = %arg1, %[[PS:.*]] = %arg0, %{{.*}} = %{{.*}})
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[PS]][%[[I]], 0, 0]
// CHECK-NOT: linalg.fill
// CHECK: %[[G:.*]] = linalg.generic {{.*}} outs(%[[ROW]] : tensor<?x4xf32>)
// CHECK-SAME: rnn.gemm_weight_layout
// CHECK: %[[BACK:.*]] = tensor.insert_slice %[[G]] into %[[PS]][%[[I]], 0, 0]
// CHECK: scf.yield %{{.*}}, %[[BACK]],
rnn.cell @acc_elman inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %g = rnn.matmul %h, %U acc %p : tensor<?x4xf32>, tensor<4x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %t = rnn.tanh %g : tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}
func.func @accumulating(%ps: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %U: tensor<4x4xf32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @acc_elman inputs(%ps : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U : tensor<4x4xf32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// A select is a comparison and an arith.select in an elementwise generic,
// its four operands broadcast; a transpose is a generic that reads its input
// through the permutation (the dynamic sizes taken from the permuted
// dimensions); a reshape of unit dimensions is a collapse then an expand
// (views, no copy).
// CHECK-LABEL: func.func @select_and_layout
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}}, %arg0, %{{.*}} : tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32>, tensor<f32>)
// CHECK: %[[C:.*]] = arith.cmpf oge,
// CHECK: arith.select %[[C]],
// CHECK: %[[D1:.*]] = tensor.dim %arg1, %c1
// CHECK: %[[D0:.*]] = tensor.dim %arg1, %c0
// CHECK: tensor.empty(%[[D1]], %[[D0]]) : tensor<?x?x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$IN:.*]], #[[$OUT:.*]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<?x?x4xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] output_shape
// CHECK: tensor.collapse_shape %arg2 {{\[\[}}0, 1], [2]] : tensor<1x?x4xf32> into tensor<?x4xf32>
// CHECK-NOT: rnn.
func.func @select_and_layout(%x: tensor<?x4xf32>, %xs: tensor<?x?x4xf32>, %h: tensor<1x?x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x4xf32>) {
  %zero = rnn.constant 0.0 : tensor<f32>
  %elu = rnn.select ge %x, %zero, %x, %zero : tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32>, tensor<f32>
  %bt = rnn.transpose %xs permutation [1, 0, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %y = rnn.reshape %bt : tensor<?x?x4xf32> -> tensor<?x1x?x4xf32>
  %h2 = rnn.reshape %h : tensor<1x?x4xf32> -> tensor<?x4xf32>
  return %elu, %y, %h2 : tensor<?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x4xf32>
}
