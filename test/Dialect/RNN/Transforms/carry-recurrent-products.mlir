// RUN: rnn-opt %s -split-input-file --rnn-carry-recurrent-products | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-carry-recurrent-products="max-cost-ratio=8" | FileCheck %s --check-prefix=RATIO

// A projected state r = m·W_hrᵀ read only as r·Uᵀ: the cell carries
// q = r·Uᵀ instead, computed from m with U·W_hr ([N, H], a new parameter
// computed once at each application, full precision), so that both matmuls
// read m. Applications pass r0·Uᵀ (with the use's attributes) and get one
// more final state; U is no longer a parameter of the cell.
// CHECK-LABEL: rnn.cell @lstmp
// CHECK-SAME: states(%[[R:[^:]*]]: tensor<?x2xf32>, %[[Q:[^:]*]]: tensor<?x8xf32>)
// CHECK-SAME: params(%[[WHR:[^:]*]]: tensor<2x4xf32>, %[[PROD:[^:]*]]: tensor<8x4xf32>)
// CHECK-NOT: %[[R]]
// CHECK: %[[G:.*]] = rnn.add %{{.*}}, %[[Q]]
// CHECK: %[[M:.*]] = rnn.tanh
// CHECK: %[[RN:.*]] = rnn.matmul %[[M]], %[[WHR]] : tensor<?x4xf32>, tensor<2x4xf32> -> tensor<?x2xf32>
// CHECK: %[[QN:.*]] = rnn.matmul %[[M]], %[[PROD]] allow_tf32 : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
// CHECK: rnn.yield outputs(%[[RN]] : tensor<?x2xf32>) states(%[[RN]], %[[QN]] : tensor<?x2xf32>, tensor<?x8xf32>)
// CHECK-LABEL: func.func @run
// CHECK-DAG: %[[Q0:.*]] = rnn.matmul %arg1, %arg2 allow_tf32 : tensor<3x2xf32>, tensor<8x2xf32> -> tensor<3x8xf32>
// CHECK-DAG: %[[P:.*]] = rnn.matmul %arg2, %arg3 weight_in_out : tensor<8x2xf32>, tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK: %{{.*}}, %[[FIN:.*]]:2 = rnn.scan @lstmp inputs(%arg0 : tensor<?x3x8xf32>) init(%arg1, %[[Q0]] : tensor<3x2xf32>, tensor<3x8xf32>)
// CHECK-SAME: params(%arg3, %[[P]] : tensor<2x4xf32>, tensor<8x4xf32>)
// CHECK: %[[STEPQ0:.*]] = rnn.matmul %arg1, %arg2 allow_tf32
// CHECK: rnn.step @lstmp inputs(%{{.*}}) states(%arg1, %[[STEPQ0]] :
// CHECK: return %{{.*}}, %[[FIN]]#0
rnn.cell @lstmp inputs(%p: tensor<?x8xf32>) states(%r: tensor<?x2xf32>)
    params(%U: tensor<8x2xf32>, %W_hr: tensor<2x4xf32>) -> (tensor<?x2xf32>) {
  %ur = rnn.matmul %r, %U allow_tf32 : tensor<?x2xf32>, tensor<8x2xf32> -> tensor<?x8xf32>
  %g = rnn.add %p, %ur : tensor<?x8xf32>, tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %s = rnn.sigmoid %a : tensor<?x4xf32>
  %t = rnn.mul %s, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.tanh %t : tensor<?x4xf32>
  %rn = rnn.matmul %m, %W_hr : tensor<?x4xf32>, tensor<2x4xf32> -> tensor<?x2xf32>
  rnn.yield outputs(%rn : tensor<?x2xf32>) states(%rn : tensor<?x2xf32>)
}
func.func @run(%ps: tensor<?x3x8xf32>, %r0: tensor<3x2xf32>, %U: tensor<8x2xf32>, %W_hr: tensor<2x4xf32>, %p: tensor<3x8xf32>)
    -> (tensor<?x3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %ys, %rT = rnn.scan @lstmp inputs(%ps : tensor<?x3x8xf32>) init(%r0 : tensor<3x2xf32>)
      params(%U, %W_hr : tensor<8x2xf32>, tensor<2x4xf32>) -> outputs(tensor<?x3x2xf32>) states(tensor<3x2xf32>)
  %y, %r1 = rnn.step @lstmp inputs(%p : tensor<3x8xf32>) states(%r0 : tensor<3x2xf32>)
      params(%U, %W_hr : tensor<8x2xf32>, tensor<2x4xf32>) -> outputs(tensor<3x2xf32>) states(tensor<3x2xf32>)
  return %ys, %rT, %r1 : tensor<?x3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// W_hr stored [in, out] (weight_in_out): the product reads it as is. Both
// matmuls allow TF32, so the product does too (the first case: only one
// does, and the product is full precision).
// CHECK-LABEL: rnn.cell @in_out
// CHECK: rnn.matmul %{{.*}}, %{{.*}} allow_tf32 : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
// CHECK-LABEL: func.func @run_in_out
// CHECK: rnn.matmul %arg2, %arg3 allow_tf32 : tensor<8x2xf32>, tensor<4x2xf32> -> tensor<8x4xf32>
rnn.cell @in_out inputs(%p: tensor<?x8xf32>) states(%r: tensor<?x2xf32>)
    params(%U: tensor<8x2xf32>, %W_hr: tensor<4x2xf32>) -> (tensor<?x2xf32>) {
  %ur = rnn.matmul %r, %U allow_tf32 : tensor<?x2xf32>, tensor<8x2xf32> -> tensor<?x8xf32>
  %g = rnn.add %p, %ur : tensor<?x8xf32>, tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.mul %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %rn = rnn.matmul %m, %W_hr weight_in_out allow_tf32 : tensor<?x4xf32>, tensor<4x2xf32> -> tensor<?x2xf32>
  rnn.yield outputs(%rn : tensor<?x2xf32>) states(%rn : tensor<?x2xf32>)
}
func.func @run_in_out(%ps: tensor<?x3x8xf32>, %r0: tensor<3x2xf32>, %U: tensor<8x2xf32>, %W_hr: tensor<4x2xf32>) -> tensor<?x3x2xf32> {
  %ys, %rT = rnn.scan @in_out inputs(%ps : tensor<?x3x8xf32>) init(%r0 : tensor<3x2xf32>)
      params(%U, %W_hr : tensor<8x2xf32>, tensor<4x2xf32>) -> outputs(tensor<?x3x2xf32>) states(tensor<3x2xf32>)
  return %ys : tensor<?x3x2xf32>
}

// -----

// H / P = 8 / 1 = 8 > 2: carrying the product would cost eight times the
// matmul it replaces, so the cell is left alone unless the limit allows it.
// CHECK-LABEL: rnn.cell @narrow
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x1xf32>) params
// RATIO-LABEL: rnn.cell @narrow
// RATIO-SAME: states(%{{[^:]*}}: tensor<?x1xf32>, %{{[^:]*}}: tensor<?x16xf32>)
rnn.cell @narrow inputs(%p: tensor<?x16xf32>) states(%r: tensor<?x1xf32>)
    params(%U: tensor<16x1xf32>, %W_hr: tensor<1x8xf32>) -> (tensor<?x1xf32>) {
  %ur = rnn.matmul %r, %U : tensor<?x1xf32>, tensor<16x1xf32> -> tensor<?x16xf32>
  %g = rnn.add %p, %ur : tensor<?x16xf32>, tensor<?x16xf32>
  %a, %b = rnn.split %g : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  %m = rnn.mul %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
  %rn = rnn.matmul %m, %W_hr : tensor<?x8xf32>, tensor<1x8xf32> -> tensor<?x1xf32>
  rnn.yield outputs(%rn : tensor<?x1xf32>) states(%rn : tensor<?x1xf32>)
}
func.func @run_narrow(%ps: tensor<?x3x16xf32>, %r0: tensor<3x1xf32>, %U: tensor<16x1xf32>, %W_hr: tensor<1x8xf32>) -> tensor<?x3x1xf32> {
  %ys, %rT = rnn.scan @narrow inputs(%ps : tensor<?x3x16xf32>) init(%r0 : tensor<3x1xf32>)
      params(%U, %W_hr : tensor<16x1xf32>, tensor<1x8xf32>) -> outputs(tensor<?x3x1xf32>) states(tensor<3x1xf32>)
  return %ys : tensor<?x3x1xf32>
}

// -----

// Left alone: a state also read directly, a state whose next value is not
// a matmul, U stored [in, out], and bf16 (the cast sits between state and
// matmul).
// CHECK-LABEL: rnn.cell @read_directly
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x2xf32>) params
// CHECK-LABEL: rnn.cell @not_projected
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x2xf32>) params
// CHECK-LABEL: rnn.cell @u_in_out
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x2xf32>) params
// CHECK-LABEL: rnn.cell @bf16
// CHECK-SAME: states(%{{[^:]*}}: tensor<?x2xf32>) params
rnn.cell @read_directly inputs(%p: tensor<?x8xf32>) states(%r: tensor<?x2xf32>)
    params(%U: tensor<8x2xf32>, %W_hr: tensor<2x4xf32>) -> (tensor<?x2xf32>) {
  %ur = rnn.matmul %r, %U : tensor<?x2xf32>, tensor<8x2xf32> -> tensor<?x8xf32>
  %g = rnn.add %p, %ur : tensor<?x8xf32>, tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.mul %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %rn = rnn.matmul %m, %W_hr : tensor<?x4xf32>, tensor<2x4xf32> -> tensor<?x2xf32>
  %sum = rnn.add %rn, %r : tensor<?x2xf32>, tensor<?x2xf32>
  rnn.yield outputs(%sum : tensor<?x2xf32>) states(%rn : tensor<?x2xf32>)
}
rnn.cell @not_projected inputs(%p: tensor<?x8xf32>) states(%r: tensor<?x2xf32>)
    params(%U: tensor<8x2xf32>, %W_hr: tensor<2x4xf32>) -> (tensor<?x2xf32>) {
  %ur = rnn.matmul %r, %U : tensor<?x2xf32>, tensor<8x2xf32> -> tensor<?x8xf32>
  %g = rnn.add %p, %ur : tensor<?x8xf32>, tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.mul %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %rn = rnn.matmul %m, %W_hr : tensor<?x4xf32>, tensor<2x4xf32> -> tensor<?x2xf32>
  %t = rnn.tanh %rn : tensor<?x2xf32>
  rnn.yield outputs(%t : tensor<?x2xf32>) states(%t : tensor<?x2xf32>)
}
rnn.cell @u_in_out inputs(%p: tensor<?x8xf32>) states(%r: tensor<?x2xf32>)
    params(%U: tensor<2x8xf32>, %W_hr: tensor<2x4xf32>) -> (tensor<?x2xf32>) {
  %ur = rnn.matmul %r, %U weight_in_out : tensor<?x2xf32>, tensor<2x8xf32> -> tensor<?x8xf32>
  %g = rnn.add %p, %ur : tensor<?x8xf32>, tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.mul %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %rn = rnn.matmul %m, %W_hr : tensor<?x4xf32>, tensor<2x4xf32> -> tensor<?x2xf32>
  rnn.yield outputs(%rn : tensor<?x2xf32>) states(%rn : tensor<?x2xf32>)
}
rnn.cell @bf16 inputs(%p: tensor<?x8xf32>) states(%r: tensor<?x2xf32>)
    params(%U: tensor<8x2xbf16>, %W_hr: tensor<2x4xbf16>) -> (tensor<?x2xf32>) {
  %r16 = rnn.cast %r : tensor<?x2xf32> to tensor<?x2xbf16>
  %ur = rnn.matmul %r16, %U : tensor<?x2xbf16>, tensor<8x2xbf16> -> tensor<?x8xf32>
  %g = rnn.add %p, %ur : tensor<?x8xf32>, tensor<?x8xf32>
  %a, %b = rnn.split %g : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %m = rnn.mul %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
  %m16 = rnn.cast %m : tensor<?x4xf32> to tensor<?x4xbf16>
  %rn = rnn.matmul %m16, %W_hr : tensor<?x4xbf16>, tensor<2x4xbf16> -> tensor<?x2xf32>
  rnn.yield outputs(%rn : tensor<?x2xf32>) states(%rn : tensor<?x2xf32>)
}
