// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: func.func @lstm_2layer
// CHECK: %[[Y1:[^ ,]+]], {{.*}} = rnn.scan @lstm_layer0 inputs(%{{.*}} : tensor<?x?x10xf32>)
// CHECK: rnn.scan @lstm_layer1 inputs(%[[Y1]] : tensor<?x?x20xf32>)
// CHECK-SAME: -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
// CHECK: return

// Two stacked LSTM layers (torch.nn.LSTM(10, 20, num_layers=2)), I = 10, H = 20; each
// layer's equations as in lstm.mlir, layer 2's input sequence is layer 1's output sequence.
// A cell's input width is part of its type, so the layers need two cells with the same body:
// @lstm_layer0 (W [4H, I]) and @lstm_layer1 (W [4H, H]). Stresses: a chain of scans (wavefront).

rnn.cell @lstm_layer0 inputs(%x: tensor<?x10xf32>)
    states(%h: tensor<?x20xf32>, %c: tensor<?x20xf32>)
    params(%W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
           %b_W: tensor<80xf32>, %b_U: tensor<80xf32>)
    -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<80x10xf32> -> tensor<?x80xf32>
  %wxb = rnn.add %wx, %b_W : tensor<?x80xf32>, tensor<80xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<80x20xf32> -> tensor<?x80xf32>
  %uhb = rnn.add %uh, %b_U : tensor<?x80xf32>, tensor<80xf32>
  %gates = rnn.add %wxb, %uhb : tensor<?x80xf32>, tensor<?x80xf32>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x80xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %si = rnn.sigmoid %i : tensor<?x20xf32>
  %sf = rnn.sigmoid %f : tensor<?x20xf32>
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

rnn.cell @lstm_layer1 inputs(%x: tensor<?x20xf32>)
    states(%h: tensor<?x20xf32>, %c: tensor<?x20xf32>)
    params(%W: tensor<80x20xf32>, %U: tensor<80x20xf32>,
           %b_W: tensor<80xf32>, %b_U: tensor<80xf32>)
    -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x20xf32>, tensor<80x20xf32> -> tensor<?x80xf32>
  %wxb = rnn.add %wx, %b_W : tensor<?x80xf32>, tensor<80xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<80x20xf32> -> tensor<?x80xf32>
  %uhb = rnn.add %uh, %b_U : tensor<?x80xf32>, tensor<80xf32>
  %gates = rnn.add %wxb, %uhb : tensor<?x80xf32>, tensor<?x80xf32>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x80xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %si = rnn.sigmoid %i : tensor<?x20xf32>
  %sf = rnn.sigmoid %f : tensor<?x20xf32>
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

func.func @lstm_2layer(%xs: tensor<?x?x10xf32>,
                        %h0_0: tensor<?x20xf32>, %c0_0: tensor<?x20xf32>,
                        %h0_1: tensor<?x20xf32>, %c0_1: tensor<?x20xf32>,
                        %W_0: tensor<80x10xf32>, %U_0: tensor<80x20xf32>,
                        %b_W_0: tensor<80xf32>, %b_U_0: tensor<80xf32>,
                        %W_1: tensor<80x20xf32>, %U_1: tensor<80x20xf32>,
                        %b_W_1: tensor<80xf32>, %b_U_1: tensor<80xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>,
        tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys_0, %hT_0, %cT_0 = rnn.scan @lstm_layer0 inputs(%xs : tensor<?x?x10xf32>)
      init(%h0_0, %c0_0 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W_0, %U_0, %b_W_0, %b_U_0 : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  %ys_1, %hT_1, %cT_1 = rnn.scan @lstm_layer1 inputs(%ys_0 : tensor<?x?x20xf32>)
      init(%h0_1, %c0_1 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W_1, %U_1, %b_W_1, %b_U_1 : tensor<80x20xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys_1, %hT_0, %cT_0, %hT_1, %cT_1
      : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
