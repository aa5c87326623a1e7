// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @mgu
// CHECK: rnn.split {{.*}} axis 0 : tensor<40x20xf32> -> tensor<20x20xf32>, tensor<20x20xf32>
// CHECK: rnn.sigmoid
// CHECK: rnn.matmul {{.*}} : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
// CHECK-NEXT: rnn.add
// CHECK-LABEL: func.func @mgu_seq

// Minimal gated unit (Zhou et al. 2016), I = 10, H = 20. Not in PyTorch: W [2H, I],
// U [2H, H] and b [2H] with rows f, h (one bias, as in the paper); U is cut into U_f and U_h.
//   f = σ(W_f x + U_f h₋₁ + b_f);  ĥ = tanh(W_h x + U_h (f⊙h₋₁) + b_h);  h = (1−f)⊙h₋₁ + f⊙ĥ
// Stresses: the second recurrent matmul depends on the gate f (two stages per step).

rnn.cell @mgu inputs(%x: tensor<?x10xf32>) states(%h: tensor<?x20xf32>)
    params(%W: tensor<40x10xf32>, %U: tensor<40x20xf32>, %b: tensor<40xf32>)
    -> (tensor<?x20xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %U_f, %U_h = rnn.split %U axis 0 : tensor<40x20xf32> -> tensor<20x20xf32>, tensor<20x20xf32>
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<40x10xf32> -> tensor<?x40xf32>
  %gx = rnn.add %wx, %b : tensor<?x40xf32>, tensor<40xf32>
  %x_f, %x_h = rnn.split %gx : tensor<?x40xf32> -> tensor<?x20xf32>, tensor<?x20xf32>
  // Stage 1: the forget gate.
  %uf = rnn.matmul %h, %U_f : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
  %f_pre = rnn.add %x_f, %uf : tensor<?x20xf32>, tensor<?x20xf32>
  %f = rnn.sigmoid %f_pre : tensor<?x20xf32>
  // Stage 2: the candidate, through a matmul of the gated state.
  %fh = rnn.mul %f, %h : tensor<?x20xf32>, tensor<?x20xf32>
  %uh = rnn.matmul %fh, %U_h : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
  %hc_pre = rnn.add %x_h, %uh : tensor<?x20xf32>, tensor<?x20xf32>
  %hc = rnn.tanh %hc_pre : tensor<?x20xf32>
  %one_minus_f = rnn.sub %one, %f : tensor<f32>, tensor<?x20xf32>
  %keep = rnn.mul %one_minus_f, %h : tensor<?x20xf32>, tensor<?x20xf32>
  %upd = rnn.mul %f, %hc : tensor<?x20xf32>, tensor<?x20xf32>
  %h_new = rnn.add %keep, %upd : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>) states(%h_new : tensor<?x20xf32>)
}

func.func @mgu_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>,
                   %W: tensor<40x10xf32>, %U: tensor<40x20xf32>, %b: tensor<40xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT = rnn.scan @mgu inputs(%xs : tensor<?x?x10xf32>)
      init(%h0 : tensor<?x20xf32>)
      params(%W, %U, %b : tensor<40x10xf32>, tensor<40x20xf32>, tensor<40xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  return %ys, %hT : tensor<?x?x20xf32>, tensor<?x20xf32>
}
