// A public function holding a fused group whose body reduces its row: the
// manifest describes the function from the group, not from its scalar body.
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = rnn.pointwise(%x) : tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%a: f32):
    %s = rnn.row_sum %a : f32
    %d = arith.divf %a, %s : f32
    rnn.pointwise_yield %d : f32
  }
  return %r : tensor<?x4xf32>
}
