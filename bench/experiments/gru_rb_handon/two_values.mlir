// The same model with its groups edited by hand: the first hands on z and r*h (as bench/experiments/compiled_kernel_shape.cu's hand-written kernels), the second reads x_n and its biases itself.
// Compiled with rnn-compile --target=cuda and timed against each other by bench/experiments/builds_ab.py (README).
module {
  rnn.cell @gru_reset_before_i1024 inputs(%arg0: tensor<?x3072xf32>) states(%arg1: tensor<?x1024xf32>) params(%arg2: tensor<3072xf32>, %arg3: tensor<2048x1024xf32>, %arg4: tensor<1024x1024xf32>, %arg5: tensor<2048xf32>, %arg6: tensor<1024xf32>) -> (tensor<?x1024xf32>) {
    %0 = rnn.matmul %arg1, %arg3 allow_tf32 : tensor<?x1024xf32>, tensor<2048x1024xf32> -> tensor<?x2048xf32>
    %1:2 = rnn.pointwise(%arg0, %arg0[1024], %arg2, %arg2[1024], %0, %0[1024], %arg5, %arg5[1024], %arg1) : tensor<?x3072xf32>, tensor<3072xf32>, tensor<?x2048xf32>, tensor<2048xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32>, tensor<?x1024xf32> {
    ^bb0(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32, %a8: f32):
      %cst = arith.constant 1.000000e+00 : f32
      %r0 = arith.addf %a0, %a2 : f32
      %r1 = arith.addf %a4, %a6 : f32
      %r2 = arith.addf %r0, %r1 : f32
      %r3 = arith.negf %r2 : f32
      %r4 = math.exp %r3 : f32
      %r5 = arith.addf %r4, %cst : f32
      %r = arith.divf %cst, %r5 : f32
      %rh = arith.mulf %r, %a8 : f32
      %z0 = arith.addf %a1, %a3 : f32
      %z1 = arith.addf %a5, %a7 : f32
      %z2 = arith.addf %z0, %z1 : f32
      %z3 = arith.negf %z2 : f32
      %z4 = math.exp %z3 : f32
      %z5 = arith.addf %z4, %cst : f32
      %z = arith.divf %cst, %z5 : f32
      rnn.pointwise_yield %z, %rh : f32, f32
    }
    %2 = rnn.matmul %1#1, %arg4 allow_tf32 : tensor<?x1024xf32>, tensor<1024x1024xf32> -> tensor<?x1024xf32>
    %3 = rnn.pointwise(%arg0[2048], %arg2[2048], %2, %arg6, %1#0, %arg1) : tensor<?x3072xf32>, tensor<3072xf32>, tensor<?x1024xf32>, tensor<1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32> {
    ^bb0(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32):
      %cst = arith.constant 1.000000e+00 : f32
      %n0 = arith.addf %a0, %a1 : f32
      %n1 = arith.addf %a2, %a3 : f32
      %n2 = arith.addf %n0, %n1 : f32
      %n = math.tanh %n2 : f32
      %omz = arith.subf %cst, %a4 : f32
      %zn = arith.mulf %omz, %n : f32
      %zh = arith.mulf %a4, %a5 : f32
      %h = arith.addf %zn, %zh : f32
      rnn.pointwise_yield %h : f32
    }
    rnn.yield outputs(%3 : tensor<?x1024xf32>) states(%3 : tensor<?x1024xf32>)
  }
  func.func @forward(%arg0: tensor<?x?x1024xf32>, %arg1: tensor<?x1024xf32>, %arg2: tensor<3072x1024xf32>, %arg3: tensor<3072x1024xf32>, %arg4: tensor<3072xf32>, %arg5: tensor<3072xf32>) -> (tensor<?x?x1024xf32>, tensor<?x1024xf32>) {
    %0:2 = rnn.split %arg3 axis 0 : tensor<3072x1024xf32> -> tensor<2048x1024xf32>, tensor<1024x1024xf32>
    %1:2 = rnn.split %arg5 : tensor<3072xf32> -> tensor<2048xf32>, tensor<1024xf32>
    %2 = rnn.matmul %arg0, %arg2 allow_tf32 : tensor<?x?x1024xf32>, tensor<3072x1024xf32> -> tensor<?x?x3072xf32>
    %outputs, %final_states = rnn.scan @gru_reset_before_i1024 inputs(%2 : tensor<?x?x3072xf32>) init(%arg1 : tensor<?x1024xf32>) params(%arg4, %0#0, %0#1, %1#0, %1#1 : tensor<3072xf32>, tensor<2048x1024xf32>, tensor<1024x1024xf32>, tensor<2048xf32>, tensor<1024xf32>) -> outputs(tensor<?x?x1024xf32>) states(tensor<?x1024xf32>)
    return %outputs, %final_states : tensor<?x?x1024xf32>, tensor<?x1024xf32>
  }
  func.func @forward_lengths(%arg0: tensor<?x?x1024xf32>, %arg1: tensor<?xi64>, %arg2: tensor<?x1024xf32>, %arg3: tensor<3072x1024xf32>, %arg4: tensor<3072x1024xf32>, %arg5: tensor<3072xf32>, %arg6: tensor<3072xf32>) -> (tensor<?x?x1024xf32>, tensor<?x1024xf32>) {
    %0:2 = rnn.split %arg4 axis 0 : tensor<3072x1024xf32> -> tensor<2048x1024xf32>, tensor<1024x1024xf32>
    %1:2 = rnn.split %arg6 : tensor<3072xf32> -> tensor<2048xf32>, tensor<1024xf32>
    %2 = rnn.matmul %arg0, %arg3 allow_tf32 : tensor<?x?x1024xf32>, tensor<3072x1024xf32> -> tensor<?x?x3072xf32>
    %outputs, %final_states = rnn.scan @gru_reset_before_i1024 inputs(%2 : tensor<?x?x3072xf32>) init(%arg2 : tensor<?x1024xf32>) params(%arg5, %0#0, %0#1, %1#0, %1#1 : tensor<3072xf32>, tensor<2048x1024xf32>, tensor<1024x1024xf32>, tensor<2048xf32>, tensor<1024xf32>) lengths(%arg1 : tensor<?xi64>) -> outputs(tensor<?x?x1024xf32>) states(tensor<?x1024xf32>)
    return %outputs, %final_states : tensor<?x?x1024xf32>, tensor<?x1024xf32>
  }
}

