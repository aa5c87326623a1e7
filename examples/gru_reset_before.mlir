// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @gru_reset_before
// CHECK: rnn.split {{.*}} axis 0 : tensor<60x20xf32> -> tensor<40x20xf32>, tensor<20x20xf32>
// CHECK: rnn.matmul {{.*}} : tensor<?x20xf32>, tensor<40x20xf32> -> tensor<?x40xf32>
// CHECK: rnn.sigmoid
// CHECK: rnn.matmul {{.*}} : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
// CHECK-LABEL: func.func @gru_reset_before_seq

// GRU with the reset gate applied before the recurrent matmul (Cho et al. v3, Keras
// reset_after=False), I = 10, H = 20. Parameters as torch.nn.GRU (r, z, n rows):
//   r, z as in gru.mlir;  n = tanh(W_n x + b_Wn + U_n (r⊙h₋₁) + b_Un);  h = (1−z)⊙n + z⊙h₋₁
// Stresses: U_n's matmul depends on r, two matmul stages per step (U is cut into U_rz and U_n).

rnn.cell @gru_reset_before inputs(%x: tensor<?x10xf32>) states(%h: tensor<?x20xf32>)
    params(%W: tensor<60x10xf32>, %U: tensor<60x20xf32>,
           %b_W: tensor<60xf32>, %b_U: tensor<60xf32>)
    -> (tensor<?x20xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %U_rz, %U_n = rnn.split %U axis 0 : tensor<60x20xf32> -> tensor<40x20xf32>, tensor<20x20xf32>
  %b_Urz, %b_Un = rnn.split %b_U : tensor<60xf32> -> tensor<40xf32>, tensor<20xf32>
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<60x10xf32> -> tensor<?x60xf32>
  %gx = rnn.add %wx, %b_W : tensor<?x60xf32>, tensor<60xf32>
  %x_r, %x_z, %x_n = rnn.split %gx : tensor<?x60xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  // Stage 1: r and z.
  %uh = rnn.matmul %h, %U_rz : tensor<?x20xf32>, tensor<40x20xf32> -> tensor<?x40xf32>
  %gh = rnn.add %uh, %b_Urz : tensor<?x40xf32>, tensor<40xf32>
  %h_r, %h_z = rnn.split %gh : tensor<?x40xf32> -> tensor<?x20xf32>, tensor<?x20xf32>
  %r_pre = rnn.add %x_r, %h_r : tensor<?x20xf32>, tensor<?x20xf32>
  %r = rnn.sigmoid %r_pre : tensor<?x20xf32>
  %z_pre = rnn.add %x_z, %h_z : tensor<?x20xf32>, tensor<?x20xf32>
  %z = rnn.sigmoid %z_pre : tensor<?x20xf32>
  // Stage 2: the candidate, through a matmul of the reset state.
  %rh = rnn.mul %r, %h : tensor<?x20xf32>, tensor<?x20xf32>
  %un = rnn.matmul %rh, %U_n : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
  %unb = rnn.add %un, %b_Un : tensor<?x20xf32>, tensor<20xf32>
  %n_pre = rnn.add %x_n, %unb : tensor<?x20xf32>, tensor<?x20xf32>
  %n = rnn.tanh %n_pre : tensor<?x20xf32>
  %one_minus_z = rnn.sub %one, %z : tensor<f32>, tensor<?x20xf32>
  %zn = rnn.mul %one_minus_z, %n : tensor<?x20xf32>, tensor<?x20xf32>
  %zh = rnn.mul %z, %h : tensor<?x20xf32>, tensor<?x20xf32>
  %h_new = rnn.add %zn, %zh : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>) states(%h_new : tensor<?x20xf32>)
}

func.func @gru_reset_before_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>,
                                %W: tensor<60x10xf32>, %U: tensor<60x20xf32>,
                                %b_W: tensor<60xf32>, %b_U: tensor<60xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT = rnn.scan @gru_reset_before inputs(%xs : tensor<?x?x10xf32>)
      init(%h0 : tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U : tensor<60x10xf32>, tensor<60x20xf32>, tensor<60xf32>, tensor<60xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  return %ys, %hT : tensor<?x?x20xf32>, tensor<?x20xf32>
}
