// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @indrnn
// CHECK: rnn.matmul {{.*}} : tensor<?x10xf32>, tensor<20x10xf32> -> tensor<?x20xf32>
// CHECK-NOT: rnn.matmul
// CHECK: rnn.mul {{.*}} : tensor<20xf32>, tensor<?x20xf32>
// CHECK: rnn.relu {{.*}} : tensor<?x20xf32>
// CHECK-LABEL: func.func @indrnn_seq

// Independently recurrent network (Li et al. 2018), I = 10, H = 20. Not in PyTorch:
// W [H, I] as torch.nn.RNN's weight_ih, u [H] the diagonal recurrent weight, b [H].
//   h = relu(W x + u⊙h₋₁ + b)
// Stresses: a diagonal (elementwise) recurrence instead of a recurrent matmul.

rnn.cell @indrnn inputs(%x: tensor<?x10xf32>) states(%h: tensor<?x20xf32>)
    params(%W: tensor<20x10xf32>, %u: tensor<20xf32>, %b: tensor<20xf32>)
    -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<20x10xf32> -> tensor<?x20xf32>
  %wxb = rnn.add %wx, %b : tensor<?x20xf32>, tensor<20xf32>
  %uh = rnn.mul %u, %h : tensor<20xf32>, tensor<?x20xf32>
  %s = rnn.add %wxb, %uh : tensor<?x20xf32>, tensor<?x20xf32>
  %h_new = rnn.relu %s : tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>) states(%h_new : tensor<?x20xf32>)
}

func.func @indrnn_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>,
                      %W: tensor<20x10xf32>, %u: tensor<20xf32>, %b: tensor<20xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT = rnn.scan @indrnn inputs(%xs : tensor<?x?x10xf32>)
      init(%h0 : tensor<?x20xf32>)
      params(%W, %u, %b : tensor<20x10xf32>, tensor<20xf32>, tensor<20xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  return %ys, %hT : tensor<?x?x20xf32>, tensor<?x20xf32>
}
