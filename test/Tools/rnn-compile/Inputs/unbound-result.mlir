func.func @f(%x: tensor<4xf32>) -> tensor<?x4xf32> {
  %n = arith.constant 3 : index
  %e = tensor.empty(%n) : tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}
