// A cell whose scalar constant stays a tensor of its own without
// rnn-optimize (no fused group absorbs it): test/Tools/rnn-compile/cuda-constants.test.
rnn.cell @cell inputs(%x: tensor<?x5xf32>) states(%h: tensor<?x5xf32>) -> (tensor<?x5xf32>) {
  %cst = rnn.constant 3.000000e+00 : tensor<f32>
  %v = rnn.add %cst, %h : tensor<f32>, tensor<?x5xf32>
  %w = rnn.add %v, %x : tensor<?x5xf32>, tensor<?x5xf32>
  rnn.yield outputs(%w : tensor<?x5xf32>) states(%w : tensor<?x5xf32>)
}
func.func @f(%xs: tensor<?x?x5xf32>, %h0: tensor<?x5xf32>) -> (tensor<?x?x5xf32>, tensor<?x5xf32>) {
  %r:2 = rnn.scan @cell inputs(%xs : tensor<?x?x5xf32>) init(%h0 : tensor<?x5xf32>) -> outputs(tensor<?x?x5xf32>) states(tensor<?x5xf32>)
  return %r#0, %r#1 : tensor<?x?x5xf32>, tensor<?x5xf32>
}
