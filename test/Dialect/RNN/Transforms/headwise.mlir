// How the rewrite passes treat rnn.headwise_matmul.
// RUN: rnn-opt %s -split-input-file --rnn-hoist-input-projection | FileCheck %s --check-prefix=HOIST
// RUN: rnn-opt %s -split-input-file --rnn-concat-gate-matmuls | FileCheck %s --check-prefix=CONCAT
// RUN: rnn-opt %s -split-input-file --rnn-optimize | FileCheck %s --check-prefix=OPT

// A head-wise product of the input is an input projection like a dense one:
// it runs once over all T·B rows before the scan. The recurrent one (it reads
// a state) stays in the step.
// HOIST-LABEL: rnn.cell @heads
// HOIST-SAME: inputs(%[[P:.*]]: tensor<?x24xf32>) states(%[[H:.*]]: tensor<?x8xf32>) params(%[[R:[^:]*]]: tensor<2x12x4xf32>, %{{.*}}: tensor<8x8xf32>)
// HOIST-NEXT: %[[RH:.*]] = rnn.headwise_matmul %[[H]], %[[R]] gates 3
// HOIST: rnn.add %[[P]], %[[RH]]
// HOIST-LABEL: func.func @run_heads
// HOIST: %[[PS:.*]] = rnn.headwise_matmul %arg0, %arg2 gates 3 : tensor<5x?x8xf32>, tensor<2x12x4xf32> -> tensor<5x?x24xf32>
// HOIST: rnn.scan @heads inputs(%[[PS]] : tensor<5x?x24xf32>)

// Concatenating gate matmuls leaves a head-wise product alone, even next to a
// dense matmul of the same state: the two are different products.
// CONCAT-LABEL: rnn.cell @heads
// CONCAT-DAG: rnn.headwise_matmul %arg1, %arg3 gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
// CONCAT-DAG: rnn.matmul %arg1, %arg4 : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>

// After rnn-optimize, the step is the recurrent head-wise product, the dense
// matmul and one fused group: the products are the group's boundaries.
// OPT-LABEL: rnn.cell @heads
// OPT: rnn.headwise_matmul
// OPT: rnn.matmul
// OPT: rnn.pointwise(
// OPT-NOT: rnn.pointwise(
// OPT: rnn.yield
rnn.cell @heads inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%Rx: tensor<2x12x4xf32>, %R: tensor<2x12x4xf32>, %V: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %px = rnn.headwise_matmul %x, %Rx gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  %ph = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  %v = rnn.matmul %h, %V : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %px, %ph : tensor<?x24xf32>, tensor<?x24xf32>
  %a, %b, %c = rnn.split %s : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %sa = rnn.sigmoid %a : tensor<?x8xf32>
  %tb = rnn.tanh %b : tensor<?x8xf32>
  %m = rnn.mul %sa, %tb : tensor<?x8xf32>, tensor<?x8xf32>
  %n = rnn.add %m, %c : tensor<?x8xf32>, tensor<?x8xf32>
  %o = rnn.add %n, %v : tensor<?x8xf32>, tensor<?x8xf32>
  %t = rnn.tanh %o : tensor<?x8xf32>
  rnn.yield outputs(%t : tensor<?x8xf32>) states(%t : tensor<?x8xf32>)
}
func.func @run_heads(%xs: tensor<5x?x8xf32>, %h0: tensor<?x8xf32>, %Rx: tensor<2x12x4xf32>,
                     %R: tensor<2x12x4xf32>, %V: tensor<8x8xf32>) -> tensor<5x?x8xf32> {
  %ys, %hT = rnn.scan @heads inputs(%xs : tensor<5x?x8xf32>) init(%h0 : tensor<?x8xf32>)
      params(%Rx, %R, %V : tensor<2x12x4xf32>, tensor<2x12x4xf32>, tensor<8x8xf32>)
      -> outputs(tensor<5x?x8xf32>) states(tensor<?x8xf32>)
  return %ys : tensor<5x?x8xf32>
}
