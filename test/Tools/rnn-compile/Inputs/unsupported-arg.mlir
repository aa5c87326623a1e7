func.func @f(%x: tensor<?x4xf32>, %n: i32) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
