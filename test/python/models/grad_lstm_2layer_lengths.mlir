// Two stacked LSTM layers (as examples/lstm_2layer.mlir: I = 10, H = 20, rows i, f, g, o)
// over padded sequences with per-sequence lengths, for test/python/test_gradients.py: both
// scans take the same lengths(%len), layer 2 reads layer 1's output sequence (zero at t >=
// len[b], where layer 2 leaves row b's state unchanged too).
// Returns (ys_1 [T, B, H], hT_0, cT_0, hT_1, cT_1).

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

func.func @lstm_2layer_lengths(%xs: tensor<?x?x10xf32>, %len: tensor<?xi32>,
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
      params(%W_0, %U_0, %b_W_0, %b_U_0
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  %ys_1, %hT_1, %cT_1 = rnn.scan @lstm_layer1 inputs(%ys_0 : tensor<?x?x20xf32>)
      init(%h0_1, %c0_1 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W_1, %U_1, %b_W_1, %b_U_1
             : tensor<80x20xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys_1, %hT_0, %cT_0, %hT_1, %cT_1
      : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
