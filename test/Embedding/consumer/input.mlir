// rnn (an Elman cell and its scan) next to the index dialect, which the
// consumer registers itself.
rnn.cell @elman inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<4x3xf32>, %U: tensor<4x4xf32>, %b: tensor<4xf32>)
    -> (tensor<?x4xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %uh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %wx, %uh : tensor<?x4xf32>, tensor<?x4xf32>
  %sb = rnn.add %s, %b : tensor<?x4xf32>, tensor<4xf32>
  %t = rnn.tanh %sb : tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}

func.func @seq(%xs: tensor<?x?x3xf32>, %h0: tensor<?x4xf32>, %W: tensor<4x3xf32>,
               %U: tensor<4x4xf32>, %b: tensor<4xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x4xf32>) {
  %ys, %hT = rnn.scan @elman inputs(%xs : tensor<?x?x3xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W, %U, %b : tensor<4x3xf32>, tensor<4x4xf32>, tensor<4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys, %hT : tensor<?x?x4xf32>, tensor<?x4xf32>
}

func.func @rows(%a: index, %b: index) -> index {
  %c = index.add %a, %b
  return %c : index
}
