// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @cifg_lstm
// CHECK-COUNT-2: rnn.matmul {{.*}} -> tensor<?x60xf32>
// CHECK: rnn.split {{.*}} : tensor<?x60xf32> -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
// CHECK: rnn.sub {{.*}} : tensor<f32>, tensor<?x20xf32>
// CHECK-LABEL: func.func @cifg_lstm_seq

// LSTM with coupled input and forget gates (CIFG), I = 10, H = 20. Not in PyTorch:
// torch.nn.LSTM's layout with the f rows removed, W [3H, I], U [3H, H], b_W, b_U [3H], rows i, g, o.
//   [i,g,o] = W x + b_W + U h₋₁ + b_U;  f = 1 − σ(i);  c = f⊙c₋₁ + σ(i)⊙tanh(g);  h = σ(o)⊙tanh(c)
// Stresses: a gate count other than 4 (three gate blocks per matmul).

rnn.cell @cifg_lstm inputs(%x: tensor<?x10xf32>)
    states(%h: tensor<?x20xf32>, %c: tensor<?x20xf32>)
    params(%W: tensor<60x10xf32>, %U: tensor<60x20xf32>,
           %b_W: tensor<60xf32>, %b_U: tensor<60xf32>)
    -> (tensor<?x20xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<60x10xf32> -> tensor<?x60xf32>
  %wxb = rnn.add %wx, %b_W : tensor<?x60xf32>, tensor<60xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<60x20xf32> -> tensor<?x60xf32>
  %uhb = rnn.add %uh, %b_U : tensor<?x60xf32>, tensor<60xf32>
  %gates = rnn.add %wxb, %uhb : tensor<?x60xf32>, tensor<?x60xf32>
  %i, %g, %o = rnn.split %gates : tensor<?x60xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %si = rnn.sigmoid %i : tensor<?x20xf32>
  %sf = rnn.sub %one, %si : tensor<f32>, tensor<?x20xf32>
  %tg = rnn.tanh %g : tensor<?x20xf32>
  %so = rnn.sigmoid %o : tensor<?x20xf32>
  %fc = rnn.mul %sf, %c : tensor<?x20xf32>, tensor<?x20xf32>
  %ig = rnn.mul %si, %tg : tensor<?x20xf32>, tensor<?x20xf32>
  %c_new = rnn.add %fc, %ig : tensor<?x20xf32>, tensor<?x20xf32>
  %tc = rnn.tanh %c_new : tensor<?x20xf32>
  %h_new = rnn.mul %so, %tc : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>)
      states(%h_new, %c_new : tensor<?x20xf32>, tensor<?x20xf32>)
}

func.func @cifg_lstm_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>, %c0: tensor<?x20xf32>,
                         %W: tensor<60x10xf32>, %U: tensor<60x20xf32>,
                         %b_W: tensor<60xf32>, %b_U: tensor<60xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT, %cT = rnn.scan @cifg_lstm inputs(%xs : tensor<?x?x10xf32>)
      init(%h0, %c0 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U : tensor<60x10xf32>, tensor<60x20xf32>, tensor<60xf32>, tensor<60xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys, %hT, %cT : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
