// RUN: rnn-opt %s -split-input-file --rnn-fuse-pointwise | FileCheck %s

// An LSTM step after hoisting: everything between the recurrent matmul and
// the yield is one group; the gate split becomes reads at offsets 0, 4, 8, 12
// of the [B, 16] tensors, the bias included; no split remains.
// CHECK-LABEL: rnn.cell @lstm
// CHECK: %[[G:.*]] = rnn.matmul
// CHECK-NEXT: %[[R:.*]]:2 = rnn.pointwise(%arg0, %arg0[4], %arg0[8], %arg0[12], %[[G]], %[[G]][4], %[[G]][8], %[[G]][12], %arg4, %arg4[4], %arg4[8], %arg4[12], %arg2)
// CHECK-SAME: : tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32>, tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
// CHECK: math.tanh
// CHECK: rnn.pointwise_yield
// CHECK-NOT: rnn.split
// CHECK: rnn.yield outputs(%[[R]]#1 : tensor<?x4xf32>) states(%[[R]]#1, %[[R]]#0 : tensor<?x4xf32>, tensor<?x4xf32>)
rnn.cell @lstm inputs(%gx: tensor<?x16xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    params(%U: tensor<16x4xf32>, %b: tensor<16xf32>) -> (tensor<?x4xf32>) {
  %gh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<16x4xf32> -> tensor<?x16xf32>
  %s = rnn.add %gx, %gh : tensor<?x16xf32>, tensor<?x16xf32>
  %g = rnn.add %s, %b : tensor<?x16xf32>, tensor<16xf32>
  %i, %f, %z, %o = rnn.split %g : tensor<?x16xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %si = rnn.sigmoid %i : tensor<?x4xf32>
  %sf = rnn.sigmoid %f : tensor<?x4xf32>
  %tz = rnn.tanh %z : tensor<?x4xf32>
  %so = rnn.sigmoid %o : tensor<?x4xf32>
  %fc = rnn.mul %sf, %c : tensor<?x4xf32>, tensor<?x4xf32>
  %iz = rnn.mul %si, %tz : tensor<?x4xf32>, tensor<?x4xf32>
  %cn = rnn.add %fc, %iz : tensor<?x4xf32>, tensor<?x4xf32>
  %tc = rnn.tanh %cn : tensor<?x4xf32>
  %hn = rnn.mul %so, %tc : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn, %cn : tensor<?x4xf32>, tensor<?x4xf32>)
}

// -----

// A dependent matmul (MGU: U_h (f ⊙ h)) separates two groups; the product
// f ⊙ h is computed by the first group, the blend by the second.
// CHECK-LABEL: rnn.cell @two_stages
// CHECK: rnn.matmul %arg1, %arg2
// CHECK: %[[A:.*]]:2 = rnn.pointwise(
// CHECK: rnn.pointwise_yield
// CHECK: %[[M:.*]] = rnn.matmul %[[A]]#{{[01]}}, %arg3
// CHECK: rnn.pointwise({{.*}}%[[M]]
// CHECK: rnn.pointwise_yield
// CHECK-NOT: rnn.pointwise(
rnn.cell @two_stages inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%Uf: tensor<4x4xf32>, %Uh: tensor<4x4xf32>) {
  %uf = rnn.matmul %h, %Uf : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %fs = rnn.add %x, %uf : tensor<?x4xf32>, tensor<?x4xf32>
  %f = rnn.sigmoid %fs : tensor<?x4xf32>
  %fh = rnn.mul %f, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %uh = rnn.matmul %fh, %Uh : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %hh = rnn.tanh %uh : tensor<?x4xf32>
  %one = rnn.constant 1.0 : tensor<f32>
  %nf = rnn.sub %one, %f : tensor<f32>, tensor<?x4xf32>
  %keep = rnn.mul %nf, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %new = rnn.mul %f, %hh : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.add %keep, %new : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%hn : tensor<?x4xf32>)
}

// -----

// A peephole product of the previous cell state has no matmul before it, but
// joins the group that reads it (one kernel, not two); the output gate reads
// the new cell state inside the same group.
// CHECK-LABEL: rnn.cell @peephole
// CHECK: rnn.matmul
// CHECK-NEXT: rnn.pointwise(
// CHECK-NOT: rnn.pointwise(
rnn.cell @peephole inputs(%gx: tensor<?x8xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    params(%U: tensor<8x4xf32>, %p: tensor<4xf32>) {
  %pc = rnn.mul %p, %c : tensor<4xf32>, tensor<?x4xf32>
  %gh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %s = rnn.add %gx, %gh : tensor<?x8xf32>, tensor<?x8xf32>
  %i, %o = rnn.split %s : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %ip = rnn.add %i, %pc : tensor<?x4xf32>, tensor<?x4xf32>
  %cn = rnn.sigmoid %ip : tensor<?x4xf32>
  %po = rnn.mul %p, %cn : tensor<4xf32>, tensor<?x4xf32>
  %op = rnn.add %o, %po : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.tanh %op : tensor<?x4xf32>
  rnn.yield states(%hn, %cn : tensor<?x4xf32>, tensor<?x4xf32>)
}

// -----

// Layer normalisation over the [B, 8] gates before their split becomes row
// sums over both halves inside the group.
// CHECK-LABEL: rnn.cell @normalised
// CHECK: rnn.pointwise(%arg0, %arg0[4]) : tensor<?x8xf32> -> tensor<?x4xf32>
// CHECK-COUNT-4: rnn.row_sum
// CHECK: math.rsqrt
// CHECK-NOT: rnn.layer_norm
rnn.cell @normalised inputs(%g: tensor<?x8xf32>) states(%h: tensor<?x4xf32>) {
  %n = rnn.layer_norm %g : tensor<?x8xf32>
  %a, %b = rnn.split %n : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %s = rnn.add %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%s : tensor<?x4xf32>)
}

// -----

// A concatenation is not pointwise: it stays between two groups.
// CHECK-LABEL: rnn.cell @concat_between
// CHECK: rnn.pointwise(
// CHECK: rnn.concat
// CHECK: rnn.pointwise(
rnn.cell @concat_between inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x8xf32>) {
  %t = rnn.tanh %x : tensor<?x4xf32>
  %e = rnn.exp %x : tensor<?x4xf32>
  %c = rnn.concat %t, %e : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %s = rnn.add %c, %h : tensor<?x8xf32>, tensor<?x8xf32>
  rnn.yield states(%s : tensor<?x8xf32>)
}

// -----

// Widths that share no iteration space (3 and 2 columns in one stage) are
// left as they are, still valid.
// CHECK-LABEL: rnn.cell @unfusable_widths
// CHECK-NOT: rnn.pointwise(
// CHECK: rnn.tanh
// CHECK: rnn.exp
rnn.cell @unfusable_widths inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x3xf32>, %k: tensor<?x2xf32>) {
  %t = rnn.tanh %x : tensor<?x3xf32>
  %e = rnn.exp %k : tensor<?x2xf32>
  rnn.yield states(%t, %e : tensor<?x3xf32>, tensor<?x2xf32>)
}

// -----

// A gate passed on unchanged is a read that the group yields as it is.
// CHECK-LABEL: rnn.cell @passthrough
// CHECK: %[[G:.*]] = rnn.matmul
// CHECK: rnn.pointwise(%[[G]], %[[G]][4]) : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[A]]
// CHECK-NEXT: rnn.pointwise_yield %[[B]], %[[T]] : f32, f32
rnn.cell @passthrough inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>, %k: tensor<?x4xf32>) params(%U: tensor<8x4xf32>) {
  %g = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %a : tensor<?x4xf32>
  rnn.yield states(%t, %b : tensor<?x4xf32>, tensor<?x4xf32>)
}
