// The cell of issue #28 (z reads the input alone; the candidate adds tanh(x)),
// used by explain.test.
rnn.cell @mut1 inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%W_z: tensor<4x4xf32>, %b_z: tensor<4xf32>, %W_r: tensor<4x4xf32>,
           %U_r: tensor<4x4xf32>, %b_r: tensor<4xf32>, %U_h: tensor<4x4xf32>,
           %b_h: tensor<4xf32>) -> (tensor<?x4xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %xz = rnn.matmul %x, %W_z : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %zp = rnn.add %xz, %b_z : tensor<?x4xf32>, tensor<4xf32>
  %z = rnn.sigmoid %zp : tensor<?x4xf32>
  %xr = rnn.matmul %x, %W_r : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %hr = rnn.matmul %h, %U_r : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %rs = rnn.add %xr, %hr : tensor<?x4xf32>, tensor<?x4xf32>
  %rp = rnn.add %rs, %b_r : tensor<?x4xf32>, tensor<4xf32>
  %r = rnn.sigmoid %rp : tensor<?x4xf32>
  %rh = rnn.mul %r, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %u = rnn.matmul %rh, %U_h : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %tx = rnn.tanh %x : tensor<?x4xf32>
  %s1 = rnn.add %u, %tx : tensor<?x4xf32>, tensor<?x4xf32>
  %s2 = rnn.add %s1, %b_h : tensor<?x4xf32>, tensor<4xf32>
  %c = rnn.tanh %s2 : tensor<?x4xf32>
  %cz = rnn.mul %c, %z : tensor<?x4xf32>, tensor<?x4xf32>
  %omz = rnn.sub %one, %z : tensor<f32>, tensor<?x4xf32>
  %hz = rnn.mul %h, %omz : tensor<?x4xf32>, tensor<?x4xf32>
  %hn = rnn.add %cz, %hz : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @run_mut1(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>,
                    %W_z: tensor<4x4xf32>, %b_z: tensor<4xf32>, %W_r: tensor<4x4xf32>,
                    %U_r: tensor<4x4xf32>, %b_r: tensor<4xf32>, %U_h: tensor<4x4xf32>,
                    %b_h: tensor<4xf32>, %len: tensor<?xi32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @mut1 reverse inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W_z, %b_z, %W_r, %U_r, %b_r, %U_h, %b_h : tensor<4x4xf32>, tensor<4xf32>,
             tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}
