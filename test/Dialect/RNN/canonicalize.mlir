// Folds that are obviously right: identities, double negation, a split of a
// concat, a concat of a split. And the ones that must not fire.
// RUN: rnn-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NOT: rnn.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %zero = rnn.constant 0.0 : tensor<f32>
  %one = rnn.constant 1.0 : tensor<f32>
  %a = rnn.add %x, %zero : tensor<?x4xf32>, tensor<f32>
  %b = rnn.add %zero, %x : tensor<f32>, tensor<?x4xf32>
  %c = rnn.sub %x, %zero : tensor<?x4xf32>, tensor<f32>
  %d = rnn.mul %x, %one : tensor<?x4xf32>, tensor<f32>
  %e = rnn.mul %one, %x : tensor<f32>, tensor<?x4xf32>
  %f = rnn.div %x, %one : tensor<?x4xf32>, tensor<f32>
  %n = rnn.neg %x : tensor<?x4xf32>
  %nn = rnn.neg %n : tensor<?x4xf32>
  return %a, %b, %c, %d, %e, %f, %nn : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A vector [N] zero vector also folds when the other operand keeps its type.
// CHECK-LABEL: func.func @vector_identity
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @vector_identity(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %zero = rnn.constant 0.0 : tensor<4xf32>
  %a = rnn.add %x, %zero : tensor<?x4xf32>, tensor<4xf32>
  return %a : tensor<?x4xf32>
}

// -----

// Adding zero still broadcasts a [4] vector to [?, 4]: no fold. 0 - x is not x,
// x * 0 is not 0 (NaN and infinity), 1 / x is not x.
// CHECK-LABEL: func.func @not_identities
// CHECK: rnn.add
// CHECK: rnn.sub
// CHECK: rnn.mul
// CHECK: rnn.div
// CHECK: rnn.neg
// CHECK-NOT: rnn.neg
func.func @not_identities(%v: tensor<4xf32>, %x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %zs = rnn.constant 0.0 : tensor<f32>
  %one = rnn.constant 1.0 : tensor<f32>
  %a = rnn.add %v, %x : tensor<4xf32>, tensor<?x4xf32>
  %b = rnn.sub %zs, %x : tensor<f32>, tensor<?x4xf32>
  %c = rnn.mul %x, %zs : tensor<?x4xf32>, tensor<f32>
  %d = rnn.div %one, %x : tensor<f32>, tensor<?x4xf32>
  %e = rnn.neg %x : tensor<?x4xf32>
  return %a, %b, %c, %d, %e : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @split_of_concat
// CHECK-SAME: (%[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x6xf32>)
// CHECK-NEXT: return %[[B]], %[[A]]
func.func @split_of_concat(%a: tensor<?x4xf32>, %b: tensor<?x6xf32>) -> (tensor<?x6xf32>, tensor<?x4xf32>) {
  %c = rnn.concat %a, %b : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x10xf32>
  %p, %q = rnn.split %c : tensor<?x10xf32> -> tensor<?x4xf32>, tensor<?x6xf32>
  return %q, %p : tensor<?x6xf32>, tensor<?x4xf32>
}

// -----

// Different piece sizes: the split is not the inverse of the concat.
// CHECK-LABEL: func.func @split_of_concat_other_sizes
// CHECK: rnn.concat
// CHECK: rnn.split
func.func @split_of_concat_other_sizes(%a: tensor<?x4xf32>, %b: tensor<?x6xf32>) -> (tensor<?x5xf32>, tensor<?x5xf32>) {
  %c = rnn.concat %a, %b : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x10xf32>
  %p, %q = rnn.split %c : tensor<?x10xf32> -> tensor<?x5xf32>, tensor<?x5xf32>
  return %p, %q : tensor<?x5xf32>, tensor<?x5xf32>
}

// -----

// CHECK-LABEL: func.func @concat_of_split
// CHECK-SAME: (%[[A:.*]]: tensor<8x6xf32>)
// CHECK-NEXT: return %[[A]]
func.func @concat_of_split(%a: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %p, %q = rnn.split %a axis 0 : tensor<8x6xf32> -> tensor<2x6xf32>, tensor<6x6xf32>
  %c = rnn.concat %p, %q axis 0 : tensor<2x6xf32>, tensor<6x6xf32> -> tensor<8x6xf32>
  return %c : tensor<8x6xf32>
}

// -----

// Pieces out of order, or along another axis, are a different tensor.
// CHECK-LABEL: func.func @concat_of_split_reordered
// CHECK: rnn.split
// CHECK: rnn.concat
// CHECK: rnn.concat
func.func @concat_of_split_reordered(%a: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<8x3xf32>) {
  %p, %q = rnn.split %a : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  %c = rnn.concat %q, %p : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  %d = rnn.concat %p, %q axis 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  return %c, %d : tensor<4x6xf32>, tensor<8x3xf32>
}

// -----

// CHECK-LABEL: func.func @single_pieces
// CHECK-SAME: (%[[A:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: return %[[A]], %[[A]]
func.func @single_pieces(%a: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %s = rnn.split %a : tensor<?x4xf32> -> tensor<?x4xf32>
  %c = rnn.concat %a : tensor<?x4xf32> -> tensor<?x4xf32>
  return %s, %c : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%[[A:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[H:.*]] = rnn.cast %[[A]] : tensor<?x4xf32> to tensor<?x4xbf16>
// CHECK-NEXT: return %[[A]], %[[H]]
func.func @casts(%a: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xbf16>) {
  %same = rnn.cast %a : tensor<?x4xf32> to tensor<?x4xf32>
  %half = rnn.cast %a : tensor<?x4xf32> to tensor<?x4xbf16>
  return %same, %half : tensor<?x4xf32>, tensor<?x4xbf16>
}

// -----

// Folding inside a cell keeps the cell valid.
// CHECK-LABEL: rnn.cell @cell_fold
// CHECK-NEXT: %[[T:.*]] = rnn.tanh %arg1
// CHECK-NEXT: rnn.yield outputs(%[[T]] : tensor<?x4xf32>) states(%[[T]] : tensor<?x4xf32>)
rnn.cell @cell_fold inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %m = rnn.mul %h, %one : tensor<?x4xf32>, tensor<f32>
  %t = rnn.tanh %m : tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}

// -----

// A select folds when its choices are one value, when it compares a value
// with itself by < or > (false, NaN included), and when it compares two
// constants; never where the chosen operand would still be broadcast.
// CHECK-LABEL: func.func @select_folds
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[Y:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: return %[[X]], %[[Y]], %[[Y]], %[[X]], %[[Y]]
func.func @select_folds(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %two = rnn.constant 2.0 : tensor<f32>
  %same = rnn.select lt %y, %x, %x, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %lt = rnn.select lt %x, %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %gt = rnn.select gt %y, %y, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %c1 = rnn.select lt %one, %two, %x, %y : tensor<f32>, tensor<f32>, tensor<?x4xf32>, tensor<?x4xf32>
  %c2 = rnn.select eq %one, %two, %x, %y : tensor<f32>, tensor<f32>, tensor<?x4xf32>, tensor<?x4xf32>
  return %same, %lt, %gt, %c1, %c2 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// x <= x, x >= x and x == x are false for a NaN, x != x true: no fold; nor
// where the chosen operand is broadcast to the result.
// CHECK-LABEL: func.func @select_not_folds
// CHECK-COUNT-5: rnn.select
func.func @select_not_folds(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>, %v: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %two = rnn.constant 2.0 : tensor<f32>
  %le = rnn.select le %x, %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %ge = rnn.select ge %x, %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %eq = rnn.select eq %x, %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %ne = rnn.select ne %x, %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %bc = rnn.select lt %one, %two, %v, %y : tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<?x4xf32>
  return %le, %ge, %eq, %ne, %bc : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Identity transposes and reshapes, a transpose undone, reshapes chained.
// CHECK-LABEL: func.func @layout_folds
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4xf32>)
// CHECK-NEXT: %[[R:.*]] = rnn.reshape %[[X]] : tensor<?x?x4xf32> -> tensor<1x?x?x4xf32>
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[R]]
func.func @layout_folds(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<1x?x?x4xf32>) {
  %id = rnn.transpose %x permutation [0, 1, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %t = rnn.transpose %x permutation [1, 2, 0] : tensor<?x?x4xf32> -> tensor<?x4x?xf32>
  %back = rnn.transpose %t permutation [2, 0, 1] : tensor<?x4x?xf32> -> tensor<?x?x4xf32>
  %same = rnn.reshape %x : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %u = rnn.reshape %x : tensor<?x?x4xf32> -> tensor<?x1x?x4xf32>
  %v = rnn.reshape %u : tensor<?x1x?x4xf32> -> tensor<1x?x?x4xf32>
  return %back, %id, %same, %v : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<1x?x?x4xf32>
}
