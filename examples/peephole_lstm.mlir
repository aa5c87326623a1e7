// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @peephole_lstm
// CHECK-COUNT-2: rnn.matmul
// CHECK-COUNT-3: rnn.mul {{.*}} : tensor<20xf32>, tensor<?x20xf32>
// CHECK-NOT: rnn.matmul
// CHECK-LABEL: func.func @peephole_lstm_seq
// CHECK: rnn.scan @peephole_lstm {{.*}} -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)

// Peephole LSTM (Gers & Schmidhuber), I = 10, H = 20. Not in PyTorch: W, U, b_W, b_U as
// torch.nn.LSTM ([4H, ·], rows i, f, g, o), plus diagonal peephole weights p_i, p_f, p_o [H].
//   i = σ(W_i x + U_i h₋₁ + b_i + p_i⊙c₋₁);  f likewise with p_f;  g = tanh(W_g x + U_g h₋₁ + b_g)
//   c = f⊙c₋₁ + i⊙g;  o = σ(W_o x + U_o h₋₁ + b_o + p_o⊙c);  h = o⊙tanh(c)   (b = b_W + b_U)
// Stresses: diagonal (elementwise) weights on the state; o waits for the new c.

rnn.cell @peephole_lstm inputs(%x: tensor<?x10xf32>)
    states(%h: tensor<?x20xf32>, %c: tensor<?x20xf32>)
    params(%W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
           %b_W: tensor<80xf32>, %b_U: tensor<80xf32>,
           %p_i: tensor<20xf32>, %p_f: tensor<20xf32>, %p_o: tensor<20xf32>)
    -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<80x10xf32> -> tensor<?x80xf32>
  %wxb = rnn.add %wx, %b_W : tensor<?x80xf32>, tensor<80xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<80x20xf32> -> tensor<?x80xf32>
  %uhb = rnn.add %uh, %b_U : tensor<?x80xf32>, tensor<80xf32>
  %gates = rnn.add %wxb, %uhb : tensor<?x80xf32>, tensor<?x80xf32>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x80xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %pi_c = rnn.mul %p_i, %c : tensor<20xf32>, tensor<?x20xf32>
  %i_pre = rnn.add %i, %pi_c : tensor<?x20xf32>, tensor<?x20xf32>
  %si = rnn.sigmoid %i_pre : tensor<?x20xf32>
  %pf_c = rnn.mul %p_f, %c : tensor<20xf32>, tensor<?x20xf32>
  %f_pre = rnn.add %f, %pf_c : tensor<?x20xf32>, tensor<?x20xf32>
  %sf = rnn.sigmoid %f_pre : tensor<?x20xf32>
  %tg = rnn.tanh %g : tensor<?x20xf32>
  %fc = rnn.mul %sf, %c : tensor<?x20xf32>, tensor<?x20xf32>
  %ig = rnn.mul %si, %tg : tensor<?x20xf32>, tensor<?x20xf32>
  %c_new = rnn.add %fc, %ig : tensor<?x20xf32>, tensor<?x20xf32>
  %po_c = rnn.mul %p_o, %c_new : tensor<20xf32>, tensor<?x20xf32>
  %o_pre = rnn.add %o, %po_c : tensor<?x20xf32>, tensor<?x20xf32>
  %so = rnn.sigmoid %o_pre : tensor<?x20xf32>
  %tc = rnn.tanh %c_new : tensor<?x20xf32>
  %h_new = rnn.mul %so, %tc : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>)
      states(%h_new, %c_new : tensor<?x20xf32>, tensor<?x20xf32>)
}

func.func @peephole_lstm_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>, %c0: tensor<?x20xf32>,
                             %W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
                             %b_W: tensor<80xf32>, %b_U: tensor<80xf32>,
                             %p_i: tensor<20xf32>, %p_f: tensor<20xf32>, %p_o: tensor<20xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT, %cT = rnn.scan @peephole_lstm inputs(%xs : tensor<?x?x10xf32>)
      init(%h0, %c0 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U, %p_i, %p_f, %p_o
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>,
               tensor<20xf32>, tensor<20xf32>, tensor<20xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys, %hT, %cT : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
