// RUN: rnn-opt %s --rnn-differentiate | FileCheck %s

// A cell whose recurrent product is head-wise. The train cell saves the
// product (the `gates` policy saves a head-wise product as it does a
// matmul); the adjoint step carries the state gradient back through the
// same weight, transposed (the one recurrent product of the backward); the
// weight gradient is one rnn.headwise_outer_sum over all T·B rows of the
// gate gradients and the states the steps started from, after the loop.
// CHECK-LABEL: rnn.cell @heads_adjoint
// CHECK-SAME: params(%[[R:.*]]: tensor<2x12x4xf32>) -> (tensor<?x8xf32>, tensor<?x24xf32>)
// CHECK: %[[DG:.*]] = rnn.concat {{.*}} -> tensor<?x24xf32>
// CHECK: %[[DH:.*]] = rnn.headwise_matmul %[[DG]], %[[R]] gates 3 transposed : tensor<?x24xf32>, tensor<2x12x4xf32> -> tensor<?x8xf32>
// CHECK: rnn.yield outputs(%{{.*}}, %[[DG]] : tensor<?x8xf32>, tensor<?x24xf32>) states(%[[DH]] : tensor<?x8xf32>)
// CHECK-LABEL: rnn.cell @heads_train
// CHECK: %[[P:.*]] = rnn.headwise_matmul
// CHECK: rnn.yield outputs(%{{.*}}, %[[P]] : tensor<?x8xf32>, tensor<?x24xf32>)
// CHECK-LABEL: func.func @run_backward
// CHECK: %[[OUT:.*]]:2, %{{.*}} = rnn.scan @heads_adjoint reverse
// CHECK: %[[HS:.*]] = rnn.previous_states
// CHECK: %[[DR:.*]] = rnn.headwise_outer_sum %[[OUT]]#1, %[[HS]] gates 3 : tensor<?x?x24xf32>, tensor<?x?x8xf32> -> tensor<2x12x4xf32>
// CHECK: return {{.*}}, %[[DR]]
rnn.cell @heads inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%R: tensor<2x12x4xf32>) -> (tensor<?x8xf32>) {
  %ph = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  %a, %b, %c = rnn.split %ph : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %sa = rnn.sigmoid %a : tensor<?x8xf32>
  %m = rnn.mul %sa, %b : tensor<?x8xf32>, tensor<?x8xf32>
  %n = rnn.add %m, %c : tensor<?x8xf32>, tensor<?x8xf32>
  %s = rnn.add %n, %x : tensor<?x8xf32>, tensor<?x8xf32>
  %t = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%t : tensor<?x8xf32>) states(%t : tensor<?x8xf32>)
}
func.func @run(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>, %R: tensor<2x12x4xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x8xf32>) {
  %ys, %hT = rnn.scan @heads inputs(%xs : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>)
      params(%R : tensor<2x12x4xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys, %hT : tensor<?x?x8xf32>, tensor<?x8xf32>
}
