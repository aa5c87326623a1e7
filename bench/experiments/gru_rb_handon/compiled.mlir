// The GRU with the reset gate first at `medium` (bench/make_zoo_models.py), after rnn-optimize as compiled: the first group hands on four values (x_z + b_Wz, x_n + b_Wn, h_z + b_Uz, r*h), the second computes z.
// Compiled with rnn-compile --target=cuda and timed against each other by bench/experiments/builds_ab.py (README).
module {
  rnn.cell @gru_reset_before_i1024 inputs(%arg0: tensor<?x3072xf32>) states(%arg1: tensor<?x1024xf32>) params(%arg2: tensor<3072xf32>, %arg3: tensor<2048x1024xf32>, %arg4: tensor<1024x1024xf32>, %arg5: tensor<2048xf32>, %arg6: tensor<1024xf32>) -> (tensor<?x1024xf32>) {
    %0 = rnn.matmul %arg1, %arg3 allow_tf32 : tensor<?x1024xf32>, tensor<2048x1024xf32> -> tensor<?x2048xf32>
    %1:4 = rnn.pointwise(%arg0, %arg0[1024], %arg0[2048], %arg2, %arg2[1024], %arg2[2048], %0, %0[1024], %arg5, %arg5[1024], %arg1) : tensor<?x3072xf32>, tensor<3072xf32>, tensor<?x2048xf32>, tensor<2048xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32> {
    ^bb0(%arg7: f32, %arg8: f32, %arg9: f32, %arg10: f32, %arg11: f32, %arg12: f32, %arg13: f32, %arg14: f32, %arg15: f32, %arg16: f32, %arg17: f32):
      %cst = arith.constant 1.000000e+00 : f32
      %4 = arith.addf %arg7, %arg10 : f32
      %5 = arith.addf %arg8, %arg11 : f32
      %6 = arith.addf %arg9, %arg12 : f32
      %7 = arith.addf %arg13, %arg15 : f32
      %8 = arith.addf %arg14, %arg16 : f32
      %9 = arith.addf %4, %7 : f32
      %10 = arith.negf %9 : f32
      %11 = math.exp %10 : f32
      %12 = arith.addf %11, %cst : f32
      %13 = arith.divf %cst, %12 : f32
      %14 = arith.mulf %13, %arg17 : f32
      rnn.pointwise_yield %5, %6, %8, %14 : f32, f32, f32, f32
    }
    %2 = rnn.matmul %1#3, %arg4 allow_tf32 : tensor<?x1024xf32>, tensor<1024x1024xf32> -> tensor<?x1024xf32>
    %3 = rnn.pointwise(%1#0, %1#2, %1#1, %2, %arg6, %arg1) : tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<1024xf32>, tensor<?x1024xf32> -> tensor<?x1024xf32> {
    ^bb0(%arg7: f32, %arg8: f32, %arg9: f32, %arg10: f32, %arg11: f32, %arg12: f32):
      %cst = arith.constant 1.000000e+00 : f32
      %4 = arith.addf %arg7, %arg8 : f32
      %5 = arith.negf %4 : f32
      %6 = math.exp %5 : f32
      %7 = arith.addf %6, %cst : f32
      %8 = arith.divf %cst, %7 : f32
      %9 = arith.subf %cst, %8 : f32
      %10 = arith.addf %arg10, %arg11 : f32
      %11 = arith.addf %arg9, %10 : f32
      %12 = math.tanh %11 : f32
      %13 = arith.mulf %9, %12 : f32
      %14 = arith.mulf %8, %arg12 : f32
      %15 = arith.addf %13, %14 : f32
      rnn.pointwise_yield %15 : f32
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

