// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @rnn_tanh
// CHECK-COUNT-2: rnn.matmul
// CHECK-NOT: rnn.matmul
// CHECK: rnn.tanh {{.*}} : tensor<?x20xf32>
// CHECK-LABEL: func.func @rnn_tanh_seq
// CHECK: rnn.scan @rnn_tanh inputs({{.*}} : tensor<?x?x10xf32>) {{.*}} -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)

// Elman RNN with tanh (torch.nn.RNN, nonlinearity='tanh'), I = 10, H = 20.
//   h = tanh(W x + b_W + U h₋₁ + b_U)
// The smallest cell: one input matmul, one recurrent matmul, one pointwise stage.

rnn.cell @rnn_tanh inputs(%x: tensor<?x10xf32>) states(%h: tensor<?x20xf32>)
    params(%W: tensor<20x10xf32>, %U: tensor<20x20xf32>,
           %b_W: tensor<20xf32>, %b_U: tensor<20xf32>)
    -> (tensor<?x20xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<20x10xf32> -> tensor<?x20xf32>
  %wxb = rnn.add %wx, %b_W : tensor<?x20xf32>, tensor<20xf32>
  %uh = rnn.matmul %h, %U : tensor<?x20xf32>, tensor<20x20xf32> -> tensor<?x20xf32>
  %uhb = rnn.add %uh, %b_U : tensor<?x20xf32>, tensor<20xf32>
  %s = rnn.add %wxb, %uhb : tensor<?x20xf32>, tensor<?x20xf32>
  %h_new = rnn.tanh %s : tensor<?x20xf32>
  rnn.yield outputs(%h_new : tensor<?x20xf32>) states(%h_new : tensor<?x20xf32>)
}

func.func @rnn_tanh_seq(%xs: tensor<?x?x10xf32>, %h0: tensor<?x20xf32>,
                        %W: tensor<20x10xf32>, %U: tensor<20x20xf32>,
                        %b_W: tensor<20xf32>, %b_U: tensor<20xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>) {
  %ys, %hT = rnn.scan @rnn_tanh inputs(%xs : tensor<?x?x10xf32>)
      init(%h0 : tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U : tensor<20x10xf32>, tensor<20x20xf32>, tensor<20xf32>, tensor<20xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  return %ys, %hT : tensor<?x?x20xf32>, tensor<?x20xf32>
}
