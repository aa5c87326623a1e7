// A GRU (as examples/gru.mlir: reset after the recurrent matmul, gates r, z, n; I = 10,
// H = 20) scanned in reverse without lengths, for test/python/test_gradients.py: the last
// input is read first, ys[t] is the state after reading xs[T-1] ... xs[t].
// Returns (ys [T, B, H], hT) where hT is the state after xs[0] (= ys[0]).

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

func.func @gru_reverse(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>,
                       %W: tensor<60x10xf32>, %U: tensor<60x20xf32>,
                       %b_W: tensor<60xf32>, %b_U: tensor<60xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT = rnn.scan @gru reverse inputs(%xs : tensor<?x?x10xf32>)
      init(%h0 : tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U
             : tensor<60x10xf32>, tensor<60x20xf32>, tensor<60xf32>, tensor<60xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  return %ys, %hT : tensor<?x?x20xf32>, tensor<?x20xf32>
}
