// Bidirectional LSTM over padded sequences with per-sequence lengths (PyTorch packed
// sequences), I = 10, H = 20; used by test/python/test_lengths.py.
// One cell @lstm (as examples/lstm.mlir: rows i, f, g, o; W [4H, I], U [4H, H], b_W, b_U [4H]),
// applied by a forward and a `reverse` scan with `lengths(%len)`, separate weights per direction;
// outputs concatenated on the feature axis, forward first.
//   at t >= len[b]: row b's state is unchanged and its outputs are zero;
//   the reverse scan starts row b at len[b] - 1.
// Returns (ys [T, B, 2H], hT_fwd, cT_fwd, hT_bwd, cT_bwd).

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

func.func @lstm_bidir_lengths(%xs: tensor<?x?x10xf32>, %len: tensor<?xi32>,
                              %h0_f: tensor<?x20xf32>, %c0_f: tensor<?x20xf32>,
                              %h0_b: tensor<?x20xf32>, %c0_b: tensor<?x20xf32>,
                              %W_f: tensor<80x10xf32>, %U_f: tensor<80x20xf32>,
                              %b_W_f: tensor<80xf32>, %b_U_f: tensor<80xf32>,
                              %W_b: tensor<80x10xf32>, %U_b: tensor<80x20xf32>,
                              %b_W_b: tensor<80xf32>, %b_U_b: tensor<80xf32>)
    -> (tensor<?x?x40xf32>, tensor<?x20xf32>, tensor<?x20xf32>,
        tensor<?x20xf32>, tensor<?x20xf32>) {
  %ys_f, %hT_f, %cT_f = rnn.scan @lstm inputs(%xs : tensor<?x?x10xf32>)
      init(%h0_f, %c0_f : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W_f, %U_f, %b_W_f, %b_U_f
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  %ys_b, %hT_b, %cT_b = rnn.scan @lstm reverse inputs(%xs : tensor<?x?x10xf32>)
      init(%h0_b, %c0_b : tensor<?x20xf32>, tensor<?x20xf32>)
      params(%W_b, %U_b, %b_W_b, %b_U_b
             : tensor<80x10xf32>, tensor<80x20xf32>, tensor<80xf32>, tensor<80xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  %ys = rnn.concat %ys_f, %ys_b : tensor<?x?x20xf32>, tensor<?x?x20xf32> -> tensor<?x?x40xf32>
  return %ys, %hT_f, %cT_f, %hT_b, %cT_b
      : tensor<?x?x40xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}
