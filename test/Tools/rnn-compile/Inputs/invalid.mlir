rnn.cell @bad inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x4xf32>) {
  rnn.yield states(%x : tensor<?x8xf32>)
}
