// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: func.func @bigru
// CHECK: %[[FWD:[^ ,]+]], {{.*}} = rnn.scan @gru inputs(
// CHECK: %[[BWD:[^ ,]+]], {{.*}} = rnn.scan @gru reverse inputs(
// CHECK: rnn.concat %[[FWD]], %[[BWD]] : tensor<?x?x20xf32>, tensor<?x?x20xf32> -> tensor<?x?x40xf32>
// CHECK: return {{.*}} : tensor<?x?x40xf32>, tensor<?x20xf32>, tensor<?x20xf32>

// Bidirectional GRU (torch.nn.GRU(10, 20, bidirectional=True)), I = 10, H = 20.
// One cell @gru (reset-after, as in gru.mlir), applied by a forward and a `reverse` scan over the
// same input with separate weights; outputs concatenated on the feature axis, forward first.
// Stresses: two independent recurrences over one sequence, joined by a concat.

rnn.cell @gru inputs(%x: tensor<?x10xf32>) states(%h: tensor<?x20xf32>)
    params(%W: tensor<60x10xf32>, %U: tensor<60x20xf32>,
           %b_W: tensor<60xf32>, %b_U: tensor<60xf32>)
    -> (tensor<?x20xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<60x10xf32> -> tensor<?x60xf32>
  %gx = rnn.add %wx, %b_W : tensor<?x60xf32>, tensor<60xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<60x20xf32> -> tensor<?x60xf32>
  %gh = rnn.add %uh, %b_U : tensor<?x60xf32>, tensor<60xf32>
  %x_r, %x_z, %x_n = rnn.split %gx : tensor<?x60xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %h_r, %h_z, %h_n = rnn.split %gh : tensor<?x60xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %r_pre = rnn.add %x_r, %h_r : tensor<?x20xf32>, tensor<?x20xf32>
  %r = rnn.sigmoid %r_pre : tensor<?x20xf32>
  %z_pre = rnn.add %x_z, %h_z : tensor<?x20xf32>, tensor<?x20xf32>
  %z = rnn.sigmoid %z_pre : tensor<?x20xf32>
  %rh = rnn.mul %r, %h_n : tensor<?x20xf32>, tensor<?x20xf32>
  %n_pre = rnn.add %x_n, %rh : tensor<?x20xf32>, tensor<?x20xf32>
  %n = rnn.tanh %n_pre : tensor<?x20xf32>
  %one_minus_z = rnn.sub %one, %z : tensor<f32>, tensor<?x20xf32>
  %zn = rnn.mul %one_minus_z, %n : tensor<?x20xf32>, tensor<?x20xf32>
  %zh = rnn.mul %z, %h : tensor<?x20xf32>, tensor<?x20xf32>
  %h_new = rnn.add %zn, %zh : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>) states(%h_new : tensor<?x20xf32>)
}

func.func @bigru(%xs: tensor<?x?x10xf32>,
                 %h0_fwd: tensor<?x20xf32>, %h0_bwd: tensor<?x20xf32>,
                 %W_fwd: tensor<60x10xf32>, %U_fwd: tensor<60x20xf32>,
                 %b_W_fwd: tensor<60xf32>, %b_U_fwd: tensor<60xf32>,
                 %W_bwd: tensor<60x10xf32>, %U_bwd: tensor<60x20xf32>,
                 %b_W_bwd: tensor<60xf32>, %b_U_bwd: tensor<60xf32>)
    -> (tensor<?x?x40xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys_fwd, %hT_fwd = rnn.scan @gru inputs(%xs : tensor<?x?x10xf32>)
      init(%h0_fwd : tensor<?x20xf32>)
      params(%W_fwd, %U_fwd, %b_W_fwd, %b_U_fwd
             : tensor<60x10xf32>, tensor<60x20xf32>, tensor<60xf32>, tensor<60xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  %ys_bwd, %hT_bwd = rnn.scan @gru reverse inputs(%xs : tensor<?x?x10xf32>)
      init(%h0_bwd : tensor<?x20xf32>)
      params(%W_bwd, %U_bwd, %b_W_bwd, %b_U_bwd
             : tensor<60x10xf32>, tensor<60x20xf32>, tensor<60xf32>, tensor<60xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  %ys = rnn.concat %ys_fwd, %ys_bwd : tensor<?x?x20xf32>, tensor<?x?x20xf32> -> tensor<?x?x40xf32>
  return %ys, %hT_fwd, %hT_bwd : tensor<?x?x40xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
