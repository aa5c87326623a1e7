// A tanh RNN whose recurrent matmul reads the f32 state cast to bf16, with
// bf16 weights and f32 accumulation: bf16 storage, f32 compute and state.
rnn.cell @c inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%W: tensor<4x4xbf16>) -> (tensor<?x4xf32>) {
  %h16 = rnn.cast %h : tensor<?x4xf32> to tensor<?x4xbf16>
  %m = rnn.matmul %h16, %W : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %s = rnn.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}
func.func @f(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %W: tensor<4x4xbf16>) -> (tensor<?x?x4xf32>, tensor<?x4xf32>) {
  %ys, %hT = rnn.scan @c inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>) params(%W : tensor<4x4xbf16>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys, %hT : tensor<?x?x4xf32>, tensor<?x4xf32>
}
