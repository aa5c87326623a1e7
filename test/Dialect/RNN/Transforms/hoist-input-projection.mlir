// RUN: rnn-opt %s -split-input-file --rnn-hoist-input-projection | FileCheck %s

// The input matmul runs once over all T*B rows before the scan; the cell
// receives the projected row and no longer the raw input. The recurrent
// matmul (it reads a state) stays.
// CHECK-LABEL: rnn.cell @elman
// CHECK-SAME: inputs(%[[P:.*]]: tensor<?x4xf32>) states(%[[H:.*]]: tensor<?x4xf32>) params(%[[U:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[UH:.*]] = rnn.matmul %[[H]], %[[U]]
// CHECK-NEXT: rnn.add %[[P]], %[[UH]]
// CHECK-LABEL: func.func @run_elman
// CHECK-SAME: (%[[XS:.*]]: tensor<5x?x3xf32>, %[[H0:.*]]: tensor<?x4xf32>, %[[W:.*]]: tensor<4x3xf32>, %[[U0:.*]]: tensor<4x4xf32>)
// CHECK: %[[PS:.*]] = rnn.matmul %[[XS]], %[[W]] : tensor<5x?x3xf32>, tensor<4x3xf32> -> tensor<5x?x4xf32>
// CHECK: rnn.scan @elman inputs(%[[PS]] : tensor<5x?x4xf32>) init(%[[H0]] : tensor<?x4xf32>) params(%[[U0]] : tensor<4x4xf32>)
rnn.cell @elman inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<4x3xf32>, %U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %uh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %wx, %uh : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  rnn.yield outputs(%t : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}
func.func @run_elman(%xs: tensor<5x?x3xf32>, %h0: tensor<?x4xf32>, %W: tensor<4x3xf32>, %U: tensor<4x4xf32>) -> tensor<5x?x4xf32> {
  %ys, %hT = rnn.scan @elman inputs(%xs : tensor<5x?x3xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W, %U : tensor<4x3xf32>, tensor<4x4xf32>) -> outputs(tensor<5x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<5x?x4xf32>
}

// -----

// An input the cell still reads elsewhere (SRU's highway term) stays an
// input; the projection of a cast input is computed over the sequence,
// cast included; a step gets the projection of its own row.
// CHECK-LABEL: rnn.cell @highway
// CHECK-SAME: inputs(%[[X:.*]]: tensor<?x4xf32>, %[[P:.*]]: tensor<?x4xf32>) states
// CHECK-NOT: rnn.matmul
// CHECK: rnn.add %[[P]], %[[X]]
// CHECK-LABEL: func.func @run_highway
// CHECK: %[[C:.*]] = rnn.cast %arg0 : tensor<5x?x4xf32> to tensor<5x?x4xbf16>
// CHECK: %[[PS:.*]] = rnn.matmul %[[C]], %arg2 : tensor<5x?x4xbf16>, tensor<4x4xbf16> -> tensor<5x?x4xf32>
// CHECK: rnn.scan @highway inputs(%arg0, %[[PS]] : tensor<5x?x4xf32>, tensor<5x?x4xf32>)
// CHECK: %[[C1:.*]] = rnn.cast %arg3 : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK: %[[P1:.*]] = rnn.matmul %[[C1]], %arg2 : tensor<2x4xbf16>, tensor<4x4xbf16> -> tensor<2x4xf32>
// CHECK: rnn.step @highway inputs(%arg3, %[[P1]] : tensor<2x4xf32>, tensor<2x4xf32>)
rnn.cell @highway inputs(%x: tensor<?x4xf32>) states(%c: tensor<?x4xf32>) params(%W: tensor<4x4xbf16>) {
  %x16 = rnn.cast %x : tensor<?x4xf32> to tensor<?x4xbf16>
  %wx = rnn.matmul %x16, %W : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
  %s = rnn.add %wx, %x : tensor<?x4xf32>, tensor<?x4xf32>
  %n = rnn.mul %s, %c : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%n : tensor<?x4xf32>)
}
func.func @run_highway(%xs: tensor<5x?x4xf32>, %c0: tensor<?x4xf32>, %W: tensor<4x4xbf16>,
                       %x: tensor<2x4xf32>, %c: tensor<2x4xf32>) -> (tensor<?x4xf32>, tensor<2x4xf32>) {
  %cT = rnn.scan @highway inputs(%xs : tensor<5x?x4xf32>) init(%c0 : tensor<?x4xf32>)
      params(%W : tensor<4x4xbf16>) -> states(tensor<?x4xf32>)
  %c1 = rnn.step @highway inputs(%x : tensor<2x4xf32>) states(%c : tensor<2x4xf32>)
      params(%W : tensor<4x4xbf16>) -> states(tensor<2x4xf32>)
  return %cT, %c1 : tensor<?x4xf32>, tensor<2x4xf32>
}

// -----

// A matmul whose left operand mixes the input and a state depends on the
// state: nothing moves.
// CHECK-LABEL: rnn.cell @mixed
// CHECK-SAME: inputs(%{{.*}}: tensor<?x4xf32>)
// CHECK: rnn.add %arg0, %arg1
// CHECK: rnn.matmul
// CHECK-LABEL: func.func @run_mixed
// CHECK-NOT: rnn.matmul
// CHECK: rnn.scan @mixed inputs(%arg0 : tensor<5x?x4xf32>)
rnn.cell @mixed inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%W: tensor<4x4xf32>) {
  %xh = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.matmul %xh, %W : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  rnn.yield states(%m : tensor<?x4xf32>)
}
func.func @run_mixed(%xs: tensor<5x?x4xf32>, %h0: tensor<?x4xf32>, %W: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %hT = rnn.scan @mixed inputs(%xs : tensor<5x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%W : tensor<4x4xf32>) -> states(tensor<?x4xf32>)
  return %hT : tensor<?x4xf32>
}

// -----

// A step that reads the final state of a scan of the same cell: both
// applications change together and the step reads the new scan.
// CHECK-LABEL: func.func @scan_then_step
// CHECK: %[[P:.*]] = rnn.matmul %arg0, %arg2 : tensor<5x2x3xf32>
// CHECK: %[[H:.*]] = rnn.scan @chained inputs(%[[P]] : tensor<5x2x4xf32>)
// CHECK: %[[Q:.*]] = rnn.matmul %arg3, %arg2 : tensor<2x3xf32>
// CHECK: rnn.step @chained inputs(%[[Q]] : tensor<2x4xf32>) states(%[[H]] : tensor<2x4xf32>)
rnn.cell @chained inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>) params(%W: tensor<4x3xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %s = rnn.add %wx, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%s : tensor<?x4xf32>)
}
func.func @scan_then_step(%xs: tensor<5x2x3xf32>, %h0: tensor<2x4xf32>, %W: tensor<4x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %hT = rnn.scan @chained inputs(%xs : tensor<5x2x3xf32>) init(%h0 : tensor<2x4xf32>)
      params(%W : tensor<4x3xf32>) -> states(tensor<2x4xf32>)
  %h1 = rnn.step @chained inputs(%x : tensor<2x3xf32>) states(%hT : tensor<2x4xf32>)
      params(%W : tensor<4x3xf32>) -> states(tensor<2x4xf32>)
  return %h1 : tensor<2x4xf32>
}
