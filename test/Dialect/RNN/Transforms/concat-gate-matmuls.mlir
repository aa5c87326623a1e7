// RUN: rnn-opt %s -split-input-file --rnn-concat-gate-matmuls --allow-unregistered-dialect | FileCheck %s

// Three gate matmuls of one state merge into one over [U_r; U_z; U_n]; the
// weights are concatenated at the scan site, once, not per step.
// CHECK-LABEL: rnn.cell @three_gates
// CHECK-SAME: params(%[[U:.*]]: tensor<12x4xf32>)
// CHECK: %[[G:.*]] = rnn.matmul %arg1, %[[U]] : tensor<?x4xf32>, tensor<12x4xf32> -> tensor<?x12xf32>
// CHECK: %[[P:.*]]:3 = rnn.split %[[G]] : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
// CHECK-NOT: rnn.matmul
// CHECK-NOT: rnn.concat
// CHECK-LABEL: func.func @run
// CHECK-SAME: (%{{.*}}: tensor<5x?x3xf32>, %{{.*}}: tensor<?x4xf32>, %[[UR:.*]]: tensor<4x4xf32>, %[[UZ:.*]]: tensor<4x4xf32>, %[[UN:.*]]: tensor<4x4xf32>)
// CHECK: %[[W:.*]] = rnn.concat %[[UR]], %[[UZ]], %[[UN]] axis 0 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<12x4xf32>
// CHECK: rnn.scan @three_gates {{.*}} params(%[[W]] : tensor<12x4xf32>)
rnn.cell @three_gates inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%Ur: tensor<4x4xf32>, %Uz: tensor<4x4xf32>, %Un: tensor<4x4xf32>) {
  %r = rnn.matmul %h, %Ur : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %z = rnn.matmul %h, %Uz : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %n = rnn.matmul %h, %Un : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %a = rnn.add %r, %z : tensor<?x4xf32>, tensor<?x4xf32>
  %b = rnn.add %a, %n : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%b : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<5x?x3xf32>, %h0: tensor<?x4xf32>, %Ur: tensor<4x4xf32>, %Uz: tensor<4x4xf32>, %Un: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %hT = rnn.scan @three_gates inputs(%xs : tensor<5x?x3xf32>) init(%h0 : tensor<?x4xf32>)
      params(%Ur, %Uz, %Un : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> states(tensor<?x4xf32>)
  return %hT : tensor<?x4xf32>
}

// -----

// Weights stored [in, out] concatenate along axis 1; each application (two
// scans with their own weights, and a step) gets its own packing.
// CHECK-LABEL: rnn.cell @in_out
// CHECK: rnn.matmul %arg1, %{{.*}} weight_in_out : tensor<?x4xf32>, tensor<4x6xf32> -> tensor<?x6xf32>
// CHECK-LABEL: func.func @two_layers
// CHECK: rnn.concat %arg2, %arg3 axis 1 : tensor<4x2xf32>, tensor<4x4xf32> -> tensor<4x6xf32>
// CHECK: rnn.scan @in_out
// CHECK: rnn.concat %arg4, %arg5 axis 1
// CHECK: rnn.scan @in_out
// CHECK: rnn.concat %arg2, %arg3 axis 1
// CHECK: rnn.step @in_out
rnn.cell @in_out inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%A: tensor<4x2xf32>, %B: tensor<4x4xf32>) {
  %a = rnn.matmul %h, %A weight_in_out : tensor<?x4xf32>, tensor<4x2xf32> -> tensor<?x2xf32>
  %b = rnn.matmul %h, %B weight_in_out : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.reduce_sum %a : tensor<?x2xf32>
  %r = rnn.add %b, %s : tensor<?x4xf32>, tensor<?x1xf32>
  rnn.yield states(%r : tensor<?x4xf32>)
}
func.func @two_layers(%xs: tensor<5x?x4xf32>, %h0: tensor<?x4xf32>, %A0: tensor<4x2xf32>, %B0: tensor<4x4xf32>,
                      %A1: tensor<4x2xf32>, %B1: tensor<4x4xf32>, %x: tensor<3x4xf32>, %h: tensor<3x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<3x4xf32>) {
  %h1 = rnn.scan @in_out inputs(%xs : tensor<5x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%A0, %B0 : tensor<4x2xf32>, tensor<4x4xf32>) -> states(tensor<?x4xf32>)
  %h2 = rnn.scan @in_out inputs(%xs : tensor<5x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%A1, %B1 : tensor<4x2xf32>, tensor<4x4xf32>) -> states(tensor<?x4xf32>)
  %h3 = rnn.step @in_out inputs(%x : tensor<3x4xf32>) states(%h : tensor<3x4xf32>)
      params(%A0, %B0 : tensor<4x2xf32>, tensor<4x4xf32>) -> states(tensor<3x4xf32>)
  return %h1, %h2, %h3 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<3x4xf32>
}

// -----

// A weight split inside the cell (a parameter-only computation) moves to the
// scan site; a dependent matmul (its left operand depends on another gate)
// stays separate: GRU reset-before keeps two stages.
// CHECK-LABEL: rnn.cell @dependent
// CHECK-SAME: params(%[[URZ:.*]]: tensor<8x4xf32>, %[[UN:.*]]: tensor<4x4xf32>)
// CHECK-NOT: rnn.split %{{.*}} axis 0
// CHECK: rnn.matmul %arg1, %[[URZ]]
// CHECK: rnn.matmul %{{.*}}, %[[UN]]
// CHECK-LABEL: func.func @run_dependent
// CHECK: %[[S:.*]]:2 = rnn.split %arg2 axis 0 : tensor<12x4xf32> -> tensor<8x4xf32>, tensor<4x4xf32>
// CHECK: rnn.scan @dependent {{.*}} params(%[[S]]#0, %[[S]]#1 : tensor<8x4xf32>, tensor<4x4xf32>)
rnn.cell @dependent inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>) params(%U: tensor<12x4xf32>) {
  %Urz, %Un = rnn.split %U axis 0 : tensor<12x4xf32> -> tensor<8x4xf32>, tensor<4x4xf32>
  %rz = rnn.matmul %h, %Urz : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %r, %z = rnn.split %rz : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %rh = rnn.mul %r, %h : tensor<?x4xf32>, tensor<?x4xf32>
  %n = rnn.matmul %rh, %Un : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %o = rnn.add %n, %z : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%o : tensor<?x4xf32>)
}
func.func @run_dependent(%xs: tensor<5x?x3xf32>, %h0: tensor<?x4xf32>, %U: tensor<12x4xf32>) -> tensor<?x4xf32> {
  %hT = rnn.scan @dependent inputs(%xs : tensor<5x?x3xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U : tensor<12x4xf32>) -> states(tensor<?x4xf32>)
  return %hT : tensor<?x4xf32>
}

// -----

// Different precision settings never merge.
// CHECK-LABEL: rnn.cell @mixed_precision
// CHECK: rnn.matmul %arg1, %arg2 :
// CHECK: rnn.matmul %arg1, %arg3 allow_tf32 :
// CHECK-NOT: rnn.concat
rnn.cell @mixed_precision inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%A: tensor<4x4xf32>, %B: tensor<4x4xf32>) {
  %a = rnn.matmul %h, %A : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %b = rnn.matmul %h, %B allow_tf32 : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%s : tensor<?x4xf32>)
}

// -----

// A cell whose symbol is used by something other than a scan or a step keeps
// its signature: nothing changes.
// CHECK-LABEL: rnn.cell @foreign_use
// CHECK: rnn.matmul %arg1, %arg2
// CHECK: rnn.matmul %arg1, %arg3
// CHECK: "test.refers_to"() {cell = @foreign_use}
rnn.cell @foreign_use inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%A: tensor<4x4xf32>, %B: tensor<4x4xf32>) {
  %a = rnn.matmul %h, %A : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %b = rnn.matmul %h, %B : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield states(%s : tensor<?x4xf32>)
}
"test.refers_to"() {cell = @foreign_use} : () -> ()
