// rnn.select (an ELU, a leaky ReLU and a maximum with the state, each written
// as a comparison and a choice; continuous, so finite differences see no
// jump) in a cell scanned over a batch-first input, with ONNX-shaped results:
// rnn.transpose and rnn.reshape around the scan (test_gradients.py).
rnn.cell @select_cell inputs(%x: tensor<?x10xf32>) states(%h: tensor<?x20xf32>)
    params(%W: tensor<20x10xf32>, %U: tensor<20x20xf32>, %b: tensor<20xf32>) -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<20x10xf32> -> tensor<?x20xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
  %s0 = rnn.add %wx, %uh : tensor<?x20xf32>, tensor<?x20xf32>
  %s = rnn.add %s0, %b : tensor<?x20xf32>, tensor<20xf32>
  %zero = rnn.constant 0.0 : tensor<f32>
  %one = rnn.constant 1.0 : tensor<f32>
  %alpha = rnn.constant 0.25 : tensor<f32>
  // ELU: s >= 0 ? s : exp(s) - 1
  %e = rnn.exp %s : tensor<?x20xf32>
  %em1 = rnn.sub %e, %one : tensor<?x20xf32>, tensor<f32>
  %elu = rnn.select ge %s, %zero, %s, %em1 : tensor<?x20xf32>, tensor<f32>, tensor<?x20xf32>, tensor<?x20xf32>
  // Leaky ReLU: s < 0 ? 0.25 s : s
  %ls = rnn.mul %s, %alpha : tensor<?x20xf32>, tensor<f32>
  %leaky = rnn.select lt %s, %zero, %ls, %s : tensor<?x20xf32>, tensor<f32>, tensor<?x20xf32>, tensor<?x20xf32>
  %a = rnn.tanh %elu : tensor<?x20xf32>
  %c = rnn.tanh %leaky : tensor<?x20xf32>
  // The larger of tanh(elu) and the state, by a comparison of two values.
  %m = rnn.select gt %a, %h, %a, %h : tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %mix = rnn.add %m, %c : tensor<?x20xf32>, tensor<?x20xf32>
  %hn = rnn.mul %mix, %alpha : tensor<?x20xf32>, tensor<f32>
  rnn.yield outputs(%hn : tensor<?x20xf32>) states(%hn : tensor<?x20xf32>)
}

// x [B, T, 10] and h0 [B, 1, 20] in; y [B, T, 1, 20] and h_T [1, B, 20] out.
func.func @select_batch_first(%x: tensor<?x?x10xf32>, %h0: tensor<?x1x20xf32>,
                              %W: tensor<20x10xf32>, %U: tensor<20x20xf32>, %b: tensor<20xf32>)
    -> (tensor<?x?x1x20xf32>, tensor<1x?x20xf32>) {
  %xs = rnn.transpose %x permutation [1, 0, 2] : tensor<?x?x10xf32> -> tensor<?x?x10xf32>
  %h = rnn.reshape %h0 : tensor<?x1x20xf32> -> tensor<?x20xf32>
  %ys, %hT = rnn.scan @select_cell inputs(%xs : tensor<?x?x10xf32>) init(%h : tensor<?x20xf32>)
      params(%W, %U, %b : tensor<20x10xf32>, tensor<20x20xf32>, tensor<20xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  %y4 = rnn.reshape %ys : tensor<?x?x20xf32> -> tensor<?x?x1x20xf32>
  %y = rnn.transpose %y4 permutation [1, 0, 2, 3] : tensor<?x?x1x20xf32> -> tensor<?x?x1x20xf32>
  %hT3 = rnn.reshape %hT : tensor<?x20xf32> -> tensor<1x?x20xf32>
  return %y, %hT3 : tensor<?x?x1x20xf32>, tensor<1x?x20xf32>
}
