// Two applications of one cell with rnn.step (no scan): a peephole-free
// LSTM step, then a second step from the states the first produced, with
// the second step's input computed from the first step's output. The
// derived backward differentiates rnn.step as one step of the adjoint cell.
rnn.cell @lstm inputs(%x: tensor<?x3xf64>)
    states(%h: tensor<?x4xf64>, %c: tensor<?x4xf64>)
    params(%W: tensor<16x3xf64>, %U: tensor<16x4xf64>, %b: tensor<16xf64>)
    -> (tensor<?x4xf64>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf64>, tensor<16x3xf64> -> tensor<?x16xf64>
  %uh = rnn.matmul %h, %U : tensor<?x4xf64>, tensor<16x4xf64> -> tensor<?x16xf64>
  %s = rnn.add %wx, %uh : tensor<?x16xf64>, tensor<?x16xf64>
  %gates = rnn.add %s, %b : tensor<?x16xf64>, tensor<16xf64>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x16xf64>
      -> tensor<?x4xf64>, tensor<?x4xf64>, tensor<?x4xf64>, tensor<?x4xf64>
  %si = rnn.sigmoid %i : tensor<?x4xf64>
  %sf = rnn.sigmoid %f : tensor<?x4xf64>
  %tg = rnn.tanh %g : tensor<?x4xf64>
  %so = rnn.sigmoid %o : tensor<?x4xf64>
  %fc = rnn.mul %sf, %c : tensor<?x4xf64>, tensor<?x4xf64>
  %ig = rnn.mul %si, %tg : tensor<?x4xf64>, tensor<?x4xf64>
  %c1 = rnn.add %fc, %ig : tensor<?x4xf64>, tensor<?x4xf64>
  %tc = rnn.tanh %c1 : tensor<?x4xf64>
  %h1 = rnn.mul %so, %tc : tensor<?x4xf64>, tensor<?x4xf64>
  rnn.yield outputs(%h1 : tensor<?x4xf64>) states(%h1, %c1 : tensor<?x4xf64>, tensor<?x4xf64>)
}

func.func @two_steps(%x: tensor<?x3xf64>, %h0: tensor<?x4xf64>, %c0: tensor<?x4xf64>,
                     %W: tensor<16x3xf64>, %U: tensor<16x4xf64>, %b: tensor<16xf64>,
                     %V: tensor<3x4xf64>)
    -> (tensor<?x4xf64>, tensor<?x4xf64>) {
  %y1, %h1, %c1 = rnn.step @lstm inputs(%x : tensor<?x3xf64>)
      states(%h0, %c0 : tensor<?x4xf64>, tensor<?x4xf64>)
      params(%W, %U, %b : tensor<16x3xf64>, tensor<16x4xf64>, tensor<16xf64>)
      -> outputs(tensor<?x4xf64>) states(tensor<?x4xf64>, tensor<?x4xf64>)
  %x2 = rnn.matmul %y1, %V : tensor<?x4xf64>, tensor<3x4xf64> -> tensor<?x3xf64>
  %y2, %h2, %c2 = rnn.step @lstm inputs(%x2 : tensor<?x3xf64>)
      states(%h1, %c1 : tensor<?x4xf64>, tensor<?x4xf64>)
      params(%W, %U, %b : tensor<16x3xf64>, tensor<16x4xf64>, tensor<16xf64>)
      -> outputs(tensor<?x4xf64>) states(tensor<?x4xf64>, tensor<?x4xf64>)
  return %y2, %c2 : tensor<?x4xf64>, tensor<?x4xf64>
}
