// Cells whose fused group writes results wider than its iteration space (rnn.pointwise
// `pieces`), used by test/python/test_wide_results.py.
//
// @lstm_backward: one step of LSTM backpropagation through time, H = 20. Inputs per step:
// the gate activations saved by the forward pass, acts = [i, f, g, o] (after sigmoid /
// tanh) [B, 4H], the cell state c_t, the previous cell state c_{t-1}, and the gradient dy
// of the step's output h_t. States: dh (the gradient reaching h_t from step t + 1) and dc
// (reaching c_t). Param: U [4H, H] (weight_in_out: dh_{t-1} = dgates U).
//   dh~ = dy + dh;  dc~ = dc + dh~ * o * (1 - tanh(c)^2)
//   di = dc~ * g * i (1 - i);  df = dc~ * c_{t-1} * f (1 - f)
//   dg = dc~ * i * (1 - g^2);  do = dh~ * tanh(c) * o (1 - o)
//   dgates = [di, df, dg, do] [B, 4H] (the step's output);  dh_{t-1} = dgates U;
//   dc_{t-1} = dc~ * f
// After rnn-optimize the four gradients, their concatenation and dc_{t-1} are one
// rnn.pointwise whose dgates result has 4 pieces; the matmul reads it.
//
// @wide_mix: a [B, 16] state s = [a, b] and an [B, 8] input x, N = 8:
//   n = layer_norm(a);  t = tanh(n + s W^T) (W [8, 16]);  u = b * mean(b)
//   s' = [u, t] + bias (bias [16]);  output y = [x, t, n] [B, 24]
// One group with row reductions (phases), a wide state (2 pieces), a wide output (3
// pieces, one of them the input read as it is).

rnn.cell @lstm_backward inputs(%acts: tensor<?x80xf32>, %c: tensor<?x20xf32>, %cp: tensor<?x20xf32>, %dy: tensor<?x20xf32>)
    states(%dh: tensor<?x20xf32>, %dc: tensor<?x20xf32>)
    params(%U: tensor<80x20xf32>) -> (tensor<?x80xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %i, %f, %g, %o = rnn.split %acts : tensor<?x80xf32> -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %dht = rnn.add %dy, %dh : tensor<?x20xf32>, tensor<?x20xf32>
  %tc = rnn.tanh %c : tensor<?x20xf32>
  %tc2 = rnn.mul %tc, %tc : tensor<?x20xf32>, tensor<?x20xf32>
  %dtc = rnn.sub %one, %tc2 : tensor<f32>, tensor<?x20xf32>
  %ho = rnn.mul %dht, %o : tensor<?x20xf32>, tensor<?x20xf32>
  %hc = rnn.mul %ho, %dtc : tensor<?x20xf32>, tensor<?x20xf32>
  %dct = rnn.add %dc, %hc : tensor<?x20xf32>, tensor<?x20xf32>
  %dcp = rnn.mul %dct, %f : tensor<?x20xf32>, tensor<?x20xf32>
  %ai = rnn.mul %dct, %g : tensor<?x20xf32>, tensor<?x20xf32>
  %af = rnn.mul %dct, %cp : tensor<?x20xf32>, tensor<?x20xf32>
  %ag = rnn.mul %dct, %i : tensor<?x20xf32>, tensor<?x20xf32>
  %ao = rnn.mul %dht, %tc : tensor<?x20xf32>, tensor<?x20xf32>
  %ni = rnn.sub %one, %i : tensor<f32>, tensor<?x20xf32>
  %si = rnn.mul %i, %ni : tensor<?x20xf32>, tensor<?x20xf32>
  %di = rnn.mul %ai, %si : tensor<?x20xf32>, tensor<?x20xf32>
  %nf = rnn.sub %one, %f : tensor<f32>, tensor<?x20xf32>
  %sf = rnn.mul %f, %nf : tensor<?x20xf32>, tensor<?x20xf32>
  %df = rnn.mul %af, %sf : tensor<?x20xf32>, tensor<?x20xf32>
  %g2 = rnn.mul %g, %g : tensor<?x20xf32>, tensor<?x20xf32>
  %tg = rnn.sub %one, %g2 : tensor<f32>, tensor<?x20xf32>
  %dg = rnn.mul %ag, %tg : tensor<?x20xf32>, tensor<?x20xf32>
  %no = rnn.sub %one, %o : tensor<f32>, tensor<?x20xf32>
  %so = rnn.mul %o, %no : tensor<?x20xf32>, tensor<?x20xf32>
  %do = rnn.mul %ao, %so : tensor<?x20xf32>, tensor<?x20xf32>
  %dgates = rnn.concat %di, %df, %dg, %do : tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32> -> tensor<?x80xf32>
  %dhp = rnn.matmul %dgates, %U weight_in_out : tensor<?x80xf32>, tensor<80x20xf32> -> tensor<?x20xf32>
  rnn.yield outputs(%dgates : tensor<?x80xf32>) states(%dhp, %dcp : tensor<?x20xf32>, tensor<?x20xf32>)
}

rnn.cell @wide_mix inputs(%x: tensor<?x8xf32>) states(%s: tensor<?x16xf32>)
    params(%W: tensor<8x16xf32>, %bias: tensor<16xf32>) -> (tensor<?x24xf32>) {
  %a, %b = rnn.split %s : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  %g = rnn.matmul %s, %W : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  %n = rnn.layer_norm %a : tensor<?x8xf32>
  %ng = rnn.add %n, %g : tensor<?x8xf32>, tensor<?x8xf32>
  %t = rnn.tanh %ng : tensor<?x8xf32>
  %mean = rnn.reduce_mean %b : tensor<?x8xf32>
  %u = rnn.mul %b, %mean : tensor<?x8xf32>, tensor<?x1xf32>
  %sn = rnn.concat %u, %t : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  %snb = rnn.add %sn, %bias : tensor<?x16xf32>, tensor<16xf32>
  %y = rnn.concat %x, %t, %n : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x24xf32>
  rnn.yield outputs(%y : tensor<?x24xf32>) states(%snb : tensor<?x16xf32>)
}

func.func @lstm_backward_seq(%acts: tensor<?x?x80xf32>, %cs: tensor<?x?x20xf32>,
                             %cps: tensor<?x?x20xf32>, %dys: tensor<?x?x20xf32>,
                             %dh0: tensor<?x20xf32>, %dc0: tensor<?x20xf32>,
                             %U: tensor<80x20xf32>)
    -> (tensor<?x?x80xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %dg, %dh, %dc = rnn.scan @lstm_backward reverse
      inputs(%acts, %cs, %cps, %dys : tensor<?x?x80xf32>, tensor<?x?x20xf32>, tensor<?x?x20xf32>, tensor<?x?x20xf32>)
      init(%dh0, %dc0 : tensor<?x20xf32>, tensor<?x20xf32>) params(%U : tensor<80x20xf32>)
      -> outputs(tensor<?x?x80xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %dg, %dh, %dc : tensor<?x?x80xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}

// The same with per-sequence lengths: positions t >= len[b] leave row b's gradients as
// they are and output zeros.
func.func @lstm_backward_lengths(%acts: tensor<?x?x80xf32>, %cs: tensor<?x?x20xf32>,
                                 %cps: tensor<?x?x20xf32>, %dys: tensor<?x?x20xf32>,
                                 %len: tensor<?xi32>,
                                 %dh0: tensor<?x20xf32>, %dc0: tensor<?x20xf32>,
                                 %U: tensor<80x20xf32>)
    -> (tensor<?x?x80xf32>, tensor<?x20xf32>, tensor<?x20xf32>) {
  %dg, %dh, %dc = rnn.scan @lstm_backward reverse
      inputs(%acts, %cs, %cps, %dys : tensor<?x?x80xf32>, tensor<?x?x20xf32>, tensor<?x?x20xf32>, tensor<?x?x20xf32>)
      init(%dh0, %dc0 : tensor<?x20xf32>, tensor<?x20xf32>) params(%U : tensor<80x20xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x80xf32>) states(tensor<?x20xf32>, tensor<?x20xf32>)
  return %dg, %dh, %dc : tensor<?x?x80xf32>, tensor<?x20xf32>, tensor<?x20xf32>
}

func.func @wide_mix_seq(%xs: tensor<?x?x8xf32>, %s0: tensor<?x16xf32>,
                        %W: tensor<8x16xf32>, %bias: tensor<16xf32>)
    -> (tensor<?x?x24xf32>, tensor<?x16xf32>) {
  %ys, %sT = rnn.scan @wide_mix inputs(%xs : tensor<?x?x8xf32>) init(%s0 : tensor<?x16xf32>)
      params(%W, %bias : tensor<8x16xf32>, tensor<16xf32>)
      -> outputs(tensor<?x?x24xf32>) states(tensor<?x16xf32>)
  return %ys, %sT : tensor<?x?x24xf32>, tensor<?x16xf32>
}
