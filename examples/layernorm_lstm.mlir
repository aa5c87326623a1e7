// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @layernorm_lstm
// CHECK-COUNT-2: rnn.layer_norm {{.*}} : tensor<?x80xf32>
// CHECK: rnn.layer_norm {{.*}} : tensor<?x20xf32>
// CHECK-NOT: rnn.layer_norm
// CHECK-LABEL: func.func @layernorm_lstm_seq
// CHECK: rnn.scan @layernorm_lstm {{.*}} -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)

// Layer-normalised LSTM (Ba et al. 2016, Haste's LayerNormLSTM), I = 10, H = 20.
// W, U as torch.nn.LSTM (rows i, f, g, o); one bias b [4H]; each LN has its own gain γ and bias β.
//   [i,f,g,o] = LN(W x)·γ_x+β_x + LN(U h₋₁)·γ_h+β_h + b;  c = σ(f)⊙c₋₁ + σ(i)⊙tanh(g)
//   h = σ(o)⊙tanh(LN(c)·γ_c+β_c)
// Stresses: row reductions (mean, variance) on the critical path of the recurrence.

rnn.cell @layernorm_lstm inputs(%x: tensor<?x10xf32>)
    states(%h: tensor<?x20xf32>, %c: tensor<?x20xf32>)
    params(%W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
           %gamma_x: tensor<80xf32>, %beta_x: tensor<80xf32>,
           %gamma_h: tensor<80xf32>, %beta_h: tensor<80xf32>,
           %b: tensor<80xf32>,
           %gamma_c: tensor<20xf32>, %beta_c: tensor<20xf32>)
    -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<80x10xf32> -> tensor<?x80xf32>
  %wx_n = rnn.layer_norm %wx {epsilon = 1.0e-05 : f64} : tensor<?x80xf32>
  %wx_g = rnn.mul %wx_n, %gamma_x : tensor<?x80xf32>, tensor<80xf32>
  %wx_gb = rnn.add %wx_g, %beta_x : tensor<?x80xf32>, tensor<80xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<80x20xf32> -> tensor<?x80xf32>
  %uh_n = rnn.layer_norm %uh {epsilon = 1.0e-05 : f64} : tensor<?x80xf32>
  %uh_g = rnn.mul %uh_n, %gamma_h : tensor<?x80xf32>, tensor<80xf32>
  %uh_gb = rnn.add %uh_g, %beta_h : tensor<?x80xf32>, tensor<80xf32>
  %s = rnn.add %wx_gb, %uh_gb : tensor<?x80xf32>, tensor<?x80xf32>
  %gates = rnn.add %s, %b : tensor<?x80xf32>, tensor<80xf32>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x80xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %si = rnn.sigmoid %i : tensor<?x20xf32>
  %sf = rnn.sigmoid %f : tensor<?x20xf32>
  %tg = rnn.tanh %g : tensor<?x20xf32>
  %so = rnn.sigmoid %o : tensor<?x20xf32>
  %fc = rnn.mul %sf, %c : tensor<?x20xf32>, tensor<?x20xf32>
  %ig = rnn.mul %si, %tg : tensor<?x20xf32>, tensor<?x20xf32>
  %c_new = rnn.add %fc, %ig : tensor<?x20xf32>, tensor<?x20xf32>
  %c_n = rnn.layer_norm %c_new {epsilon = 1.0e-05 : f64} : tensor<?x20xf32>
  %c_g = rnn.mul %c_n, %gamma_c : tensor<?x20xf32>, tensor<20xf32>
  %c_gb = rnn.add %c_g, %beta_c : tensor<?x20xf32>, tensor<20xf32>
  %tc = rnn.tanh %c_gb : tensor<?x20xf32>
  %h_new = rnn.mul %so, %tc : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>)
      states(%h_new, %c_new : tensor<?x20xf32>, tensor<?x20xf32>)
}

func.func @layernorm_lstm_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>, %c0: tensor<?x20xf32>,
                              %W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
                              %gamma_x: tensor<80xf32>, %beta_x: tensor<80xf32>,
                              %gamma_h: tensor<80xf32>, %beta_h: tensor<80xf32>,
                              %b: tensor<80xf32>,
                              %gamma_c: tensor<20xf32>, %beta_c: tensor<20xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT, %cT = rnn.scan @layernorm_lstm inputs(%xs : tensor<?x?x10xf32>)
      init(%h0, %c0 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W, %U, %gamma_x, %beta_x, %gamma_h, %beta_h, %b, %gamma_c, %beta_c
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>,
               tensor<80xf32>, tensor<80xf32>, tensor<80xf32>, tensor<20xf32>, tensor<20xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys, %hT, %cT : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
