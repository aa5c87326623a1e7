// An LSTM (as examples/lstm.mlir: rows i, f, g, o; I = 10, H = 20) applied forward and in
// reverse over padded sequences with per-sequence lengths, for test/python/test_gradients.py:
// two public functions of one module, so `rnn-compile --training` differentiates both.
//   at t >= len[b]: row b's state is unchanged and its outputs are zero;
//   the reverse scan starts row b at len[b] - 1.
// Both return (ys [T, B, H], hT, cT).

rnn.cell @lstm inputs(%x: tensor<?x10xf32>)
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

func.func @lstm_lengths(%xs: tensor<?x?x10xf32>, %len: tensor<?xi32>,
                        %h0: tensor<?x20xf32>, %c0: tensor<?x20xf32>,
                        %W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
                        %b_W: tensor<80xf32>, %b_U: tensor<80xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT, %cT = rnn.scan @lstm inputs(%xs : tensor<?x?x10xf32>)
      init(%h0, %c0 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys, %hT, %cT : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}

func.func @lstm_reverse_lengths(%xs: tensor<?x?x10xf32>, %len: tensor<?xi32>,
                                %h0: tensor<?x20xf32>, %c0: tensor<?x20xf32>,
                                %W: tensor<80x10xf32>, %U: tensor<80x20xf32>,
                                %b_W: tensor<80xf32>, %b_U: tensor<80xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT, %cT = rnn.scan @lstm reverse inputs(%xs : tensor<?x?x10xf32>)
      init(%h0, %c0 : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %ys, %hT, %cT : tensor<?x?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
