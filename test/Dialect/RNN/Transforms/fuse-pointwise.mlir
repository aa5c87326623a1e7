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

// A last-axis concatenation of pointwise values is a choice of pieces: the
// whole cell is one group whose [B, 8] result is 2 pieces of its [B, 4]
// iteration space; no concat remains.
// CHECK-LABEL: rnn.cell @concat_between
// CHECK: %[[R:.*]] = rnn.pointwise(%arg0, %arg1, %arg1[4]) : tensor<?x4xf32>, tensor<?x8xf32> -> tensor<?x8xf32> pieces 2 {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[H0:.*]]: f32, %[[H1:.*]]: f32):
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[X]]
// CHECK-NEXT: %[[E:.*]] = math.exp %[[X]]
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[T]], %[[H0]]
// CHECK-NEXT: %[[S1:.*]] = arith.addf %[[E]], %[[H1]]
// CHECK-NEXT: rnn.pointwise_yield %[[S0]], %[[S1]] : f32, f32
// CHECK-NOT: rnn.concat
// CHECK: rnn.yield states(%[[R]] : tensor<?x8xf32>)
rnn.cell @concat_between inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x8xf32>) {
  %t = rnn.tanh %x : tensor<?x4xf32>
  %e = rnn.exp %x : tensor<?x4xf32>
  %c = rnn.concat %t, %e : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %s = rnn.add %c, %h : tensor<?x8xf32>, tensor<?x8xf32>
  rnn.yield states(%s : tensor<?x8xf32>)
}

// -----

// The backward step of an LSTM (the gate activations i, f, g, o and the
// cell states saved by the forward pass are inputs; the gradients dh, dc are
// the states): the four gate gradients, concatenated into dgates [B, 16],
// feed one matmul dgates·U. The concat joins the group: ONE rnn.pointwise
// writes dgates as 4 pieces (di, df, dg, do in order) and dc₋₁ next to it.
// dc₋₁ is only yielded, yet stays in the group instead of forming one of its
// own after the matmul.
// CHECK-LABEL: rnn.cell @lstm_backward
// CHECK-NOT: rnn.concat
// CHECK: %[[G:.*]]:2 = rnn.pointwise(%arg5, %arg3, %arg4, %arg0, %arg0[4], %arg0[8], %arg0[12], %arg1, %arg2)
// CHECK-SAME: : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x16xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x16xf32> pieces 4 {
// CHECK-NEXT: ^bb0(%[[DC:.*]]: f32, %[[DY:.*]]: f32, %[[DH:.*]]: f32, %[[I:.*]]: f32, %[[F:.*]]: f32, %[[GG:.*]]: f32, %[[O:.*]]: f32, %[[C:.*]]: f32, %[[CP:.*]]: f32):
// CHECK: %[[DCT:.*]] = arith.addf %[[DC]], %{{.*}} : f32
// CHECK-NEXT: %[[DCP:.*]] = arith.mulf %[[DCT]], %[[F]] : f32
// CHECK-NEXT: %[[AI:.*]] = arith.mulf %[[DCT]], %[[GG]] : f32
// CHECK: %[[DI:.*]] = arith.mulf %[[AI]], %{{.*}} : f32
// CHECK-NEXT: %[[AF:.*]] = arith.mulf %[[DCT]], %[[CP]] : f32
// CHECK: %[[DF:.*]] = arith.mulf %[[AF]], %{{.*}} : f32
// CHECK-NEXT: %[[AG:.*]] = arith.mulf %[[DCT]], %[[I]] : f32
// CHECK: %[[DG:.*]] = arith.mulf %[[AG]], %{{.*}} : f32
// CHECK: %[[SO:.*]] = arith.mulf %[[O]], %{{.*}} : f32
// CHECK-NEXT: %[[DO:.*]] = arith.mulf %{{.*}}, %[[SO]] : f32
// CHECK-NEXT: rnn.pointwise_yield %[[DCP]], %[[DI]], %[[DF]], %[[DG]], %[[DO]] : f32, f32, f32, f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: %[[DHP:.*]] = rnn.matmul %[[G]]#1, %arg6 weight_in_out : tensor<?x16xf32>, tensor<16x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: rnn.yield outputs(%[[G]]#1 : tensor<?x16xf32>) states(%[[DHP]], %[[G]]#0 : tensor<?x4xf32>, tensor<?x4xf32>)
rnn.cell @lstm_backward inputs(%acts: tensor<?x16xf32>, %c: tensor<?x4xf32>, %cp: tensor<?x4xf32>, %dy: tensor<?x4xf32>)
    states(%dh: tensor<?x4xf32>, %dc: tensor<?x4xf32>)
    params(%U: tensor<16x4xf32>) -> (tensor<?x16xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %i, %f, %g, %o = rnn.split %acts : tensor<?x16xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %dht = rnn.add %dy, %dh : tensor<?x4xf32>, tensor<?x4xf32>
  %tc = rnn.tanh %c : tensor<?x4xf32>
  %tc2 = rnn.mul %tc, %tc : tensor<?x4xf32>, tensor<?x4xf32>
  %dtc = rnn.sub %one, %tc2 : tensor<f32>, tensor<?x4xf32>
  %ho = rnn.mul %dht, %o : tensor<?x4xf32>, tensor<?x4xf32>
  %hc = rnn.mul %ho, %dtc : tensor<?x4xf32>, tensor<?x4xf32>
  %dct = rnn.add %dc, %hc : tensor<?x4xf32>, tensor<?x4xf32>
  %dcp = rnn.mul %dct, %f : tensor<?x4xf32>, tensor<?x4xf32>
  %ai = rnn.mul %dct, %g : tensor<?x4xf32>, tensor<?x4xf32>
  %af = rnn.mul %dct, %cp : tensor<?x4xf32>, tensor<?x4xf32>
  %ag = rnn.mul %dct, %i : tensor<?x4xf32>, tensor<?x4xf32>
  %ao = rnn.mul %dht, %tc : tensor<?x4xf32>, tensor<?x4xf32>
  %ni = rnn.sub %one, %i : tensor<f32>, tensor<?x4xf32>
  %si = rnn.mul %i, %ni : tensor<?x4xf32>, tensor<?x4xf32>
  %di = rnn.mul %ai, %si : tensor<?x4xf32>, tensor<?x4xf32>
  %nf = rnn.sub %one, %f : tensor<f32>, tensor<?x4xf32>
  %sf = rnn.mul %f, %nf : tensor<?x4xf32>, tensor<?x4xf32>
  %df = rnn.mul %af, %sf : tensor<?x4xf32>, tensor<?x4xf32>
  %g2 = rnn.mul %g, %g : tensor<?x4xf32>, tensor<?x4xf32>
  %tg = rnn.sub %one, %g2 : tensor<f32>, tensor<?x4xf32>
  %dg = rnn.mul %ag, %tg : tensor<?x4xf32>, tensor<?x4xf32>
  %no = rnn.sub %one, %o : tensor<f32>, tensor<?x4xf32>
  %so = rnn.mul %o, %no : tensor<?x4xf32>, tensor<?x4xf32>
  %do = rnn.mul %ao, %so : tensor<?x4xf32>, tensor<?x4xf32>
  %dgates = rnn.concat %di, %df, %dg, %do : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x16xf32>
  %dhp = rnn.matmul %dgates, %U weight_in_out : tensor<?x16xf32>, tensor<16x4xf32> -> tensor<?x4xf32>
  rnn.yield outputs(%dgates : tensor<?x16xf32>) states(%dhp, %dcp : tensor<?x4xf32>, tensor<?x4xf32>)
}

// -----

// A concat of pieces in another order (a gate reordering) reads the gates
// at their offsets and writes them at their new places: no copy kernel.
// CHECK-LABEL: rnn.cell @reorder
// CHECK: %[[G:.*]] = rnn.matmul
// CHECK-NEXT: %[[R:.*]]:2 = rnn.pointwise(%[[G]], %[[G]][4], %[[G]][8]) : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x12xf32> pieces 3 {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[A]]
// CHECK-NEXT: rnn.pointwise_yield %[[T]], %[[C]], %[[B]], %[[T]] : f32, f32, f32, f32
// CHECK-NOT: rnn.concat
// CHECK: rnn.yield outputs(%[[R]]#1 : tensor<?x12xf32>) states(%[[R]]#0 : tensor<?x4xf32>)
rnn.cell @reorder inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%U: tensor<12x4xf32>) -> (tensor<?x12xf32>) {
  %g = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<12x4xf32> -> tensor<?x12xf32>
  %a, %bc = rnn.split %g : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x8xf32>
  %b, %c = rnn.split %bc : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %a : tensor<?x4xf32>
  %cb = rnn.concat %c, %b : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %r = rnn.concat %cb, %t : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x12xf32>
  rnn.yield outputs(%r : tensor<?x12xf32>) states(%t : tensor<?x4xf32>)
}

// -----

// Operands of widths 4 and 6 are no whole pieces of one iteration width:
// the concat stays a copy between two groups, as every concat did before.
// CHECK-LABEL: rnn.cell @concat_misfit
// CHECK: %[[T:.*]] = rnn.pointwise(%arg0) : tensor<?x4xf32> -> tensor<?x4xf32> {
// CHECK: %[[C:.*]] = rnn.concat %[[T]], %arg2 : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x10xf32>
// CHECK-NEXT: rnn.pointwise(%[[C]], %arg1) : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?x10xf32> {
// CHECK-NOT: pieces
rnn.cell @concat_misfit inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x10xf32>, %k: tensor<?x6xf32>) {
  %t = rnn.tanh %x : tensor<?x4xf32>
  %c = rnn.concat %t, %k : tensor<?x4xf32>, tensor<?x6xf32> -> tensor<?x10xf32>
  %s = rnn.add %c, %h : tensor<?x10xf32>, tensor<?x10xf32>
  rnn.yield states(%s, %k : tensor<?x10xf32>, tensor<?x6xf32>)
}

// -----

// A concat along axis 0 is no choice of columns: it stays, between the
// group that computes its operands and the one that reads it.
// CHECK-LABEL: rnn.cell @concat_axis0
// CHECK: %[[P:.*]]:2 = rnn.pointwise(%arg2, %arg3) : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32> {
// CHECK: %[[C:.*]] = rnn.concat %[[P]]#0, %[[P]]#1 axis 0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: rnn.pointwise(%[[C]], %arg1) : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> {
// CHECK-NOT: pieces
rnn.cell @concat_axis0 inputs(%x: tensor<4x4xf32>) states(%h: tensor<4x4xf32>)
    params(%p: tensor<2x4xf32>, %q: tensor<2x4xf32>) {
  %t = rnn.tanh %p : tensor<2x4xf32>
  %e = rnn.exp %q : tensor<2x4xf32>
  %c = rnn.concat %t, %e axis 0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
  %s = rnn.add %c, %h : tensor<4x4xf32>, tensor<4x4xf32>
  rnn.yield states(%s : tensor<4x4xf32>)
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

// -----

// A select fuses like any elementwise op: its comparison and choice become
// arith.cmpf and arith.select in the group's body (here an ELU of the
// recurrent product and a leaky blend with the state).
// CHECK-LABEL: rnn.cell @select_cell
// CHECK: %[[G:.*]] = rnn.matmul
// CHECK-NEXT: %[[R:.*]] = rnn.pointwise(%[[G]], %arg1)
// CHECK: arith.cmpf oge
// CHECK: arith.select
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: rnn.pointwise_yield
// CHECK-NOT: rnn.select
rnn.cell @select_cell inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %g = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %zero = rnn.constant 0.0 : tensor<f32>
  %e = rnn.exp %g : tensor<?x4xf32>
  %one = rnn.constant 1.0 : tensor<f32>
  %em1 = rnn.sub %e, %one : tensor<?x4xf32>, tensor<f32>
  %elu = rnn.select ge %g, %zero, %g, %em1 : tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.select gt %elu, %h, %elu, %h : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}

// -----

// A value that is only yielded joins the group that computes its operands
// when they stay there anyway (the gate gradients of a GRU's backward step,
// concatenated once for the saved sequence and once for the recurrent
// product): the first group writes the concatenation's pieces, the second
// neither reads nor writes them again.
// CHECK-LABEL: rnn.cell @yielded_with_its_operands
// CHECK: %[[A:.*]]:2 = rnn.pointwise(%arg0, %arg1) : {{.*}} -> tensor<?x8xf32> pieces 2, tensor<?x8xf32> pieces 2 {
// CHECK: %[[M:.*]] = rnn.matmul %[[A]]#{{[01]}}, %arg2
// CHECK: %[[B:.*]] = rnn.pointwise(%arg1, %[[M]]) : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32> {
// CHECK: rnn.yield outputs(%[[A]]#{{[01]}} : tensor<?x8xf32>) states(%[[B]] : tensor<?x4xf32>)
rnn.cell @yielded_with_its_operands inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x8xf32>) -> (tensor<?x8xf32>) {
  %a = rnn.sigmoid %x : tensor<?x4xf32>
  %b = rnn.mul %a, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %ab = rnn.concat %a, %b : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %ba = rnn.concat %b, %a : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %m = rnn.matmul %ba, %U : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  %hn = rnn.add %h, %m : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%ab : tensor<?x8xf32>) states(%hn : tensor<?x4xf32>)
}

// -----

// A value that is only yielded goes to the last group with what only it
// reads (the recomputed h of an LSTMP's backward step, for the projection's
// weight gradient): the group before the matmul computes only what the
// matmul reads.
// CHECK-LABEL: rnn.cell @yielded_late_with_its_operands
// CHECK: %[[A:.*]] = rnn.pointwise(%arg1) : tensor<?x4xf32> -> tensor<?x4xf32> {
// CHECK: %[[M:.*]] = rnn.matmul %[[A]], %arg2
// CHECK: %[[B:.*]]:2 = rnn.pointwise(%arg0, %arg1, %[[M]])
// CHECK: rnn.yield outputs(%[[B]]#{{[01]}} : tensor<?x4xf32>) states(%[[B]]#{{[01]}} : tensor<?x4xf32>)
rnn.cell @yielded_late_with_its_operands inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %s = rnn.sigmoid %x : tensor<?x4xf32>
  %t = rnn.tanh %h : tensor<?x4xf32>
  %st = rnn.mul %s, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.matmul %t, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %hn = rnn.add %h, %m : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%st : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}

// -----

// A value that is only yielded and whose operands no group of its level
// computes (a function of the step's input alone, before a matmul) still
// joins the last group rather than forming a kernel of its own.
// CHECK-LABEL: rnn.cell @yielded_alone
// CHECK: %[[M:.*]] = rnn.matmul %arg1, %arg2
// CHECK: %[[B:.*]]:2 = rnn.pointwise(%arg0, %[[M]])
// CHECK-NOT: rnn.pointwise(
// CHECK: rnn.yield outputs(%[[B]]#{{[01]}} : tensor<?x4xf32>) states(%[[B]]#{{[01]}} : tensor<?x4xf32>)
rnn.cell @yielded_alone inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %t = rnn.tanh %x : tensor<?x4xf32>
  %m = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %hn = rnn.add %x, %m : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
