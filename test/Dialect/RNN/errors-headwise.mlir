// Every diagnostic of rnn.headwise_matmul and rnn.headwise_outer_sum.
// RUN: rnn-opt %s -split-input-file -verify-diagnostics

func.func @lhs_rank(%x: tensor<8xf32>, %R: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op lhs has type 'tensor<8xf32>'; expected rows of rank 2 or more with a static last size}}
  %r = rnn.headwise_matmul %x, %R gates 1 : tensor<8xf32>, tensor<2x4x4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @weight_rank(%x: tensor<?x8xf32>, %R: tensor<8x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op rhs has type 'tensor<8x8xf32>'; expected a static 3-D weight [NH, G·N, K] (each head's [out, in] matrix)}}
  %r = rnn.headwise_matmul %x, %R gates 1 : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @gates_divide(%x: tensor<?x8xf32>, %R: tensor<2x6x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op rhs 'tensor<2x6x4xf32>' has 6 rows per head, not a multiple of gates = 4}}
  %r = rnn.headwise_matmul %x, %R gates 4 : tensor<?x8xf32>, tensor<2x6x4xf32> -> tensor<?x12xf32>
  return
}

// -----

func.func @gates_positive(%x: tensor<?x8xf32>, %R: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op attribute 'gates' failed to satisfy constraint}}
  %r = rnn.headwise_matmul %x, %R gates 0 : tensor<?x8xf32>, tensor<2x4x4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @lhs_width(%x: tensor<?x6xf32>, %R: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op lhs 'tensor<?x6xf32>' has 6 columns but rhs 'tensor<2x8x4xf32>' with gates = 2 takes NH·K = 8}}
  %r = rnn.headwise_matmul %x, %R gates 2 : tensor<?x6xf32>, tensor<2x8x4xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @lhs_width_transposed(%g: tensor<?x8xf32>, %R: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op lhs 'tensor<?x8xf32>' has 8 columns but rhs 'tensor<2x8x4xf32>' with gates = 2 takes G·NH·N = 16}}
  %r = rnn.headwise_matmul %g, %R gates 2 transposed : tensor<?x8xf32>, tensor<2x8x4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @mixed(%x: tensor<?x8xf32>, %R: tensor<2x4x4xbf16>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op operand element types differ: lhs 'tensor<?x8xf32>', rhs 'tensor<2x4x4xbf16>'}}
  %r = rnn.headwise_matmul %x, %R gates 1 : tensor<?x8xf32>, tensor<2x4x4xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @narrowing(%x: tensor<?x8xf32>, %R: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op result element type 'bf16' must be the operands' 'f32' (or f32 for f16/bf16 operands)}}
  %r = rnn.headwise_matmul %x, %R gates 1 : tensor<?x8xf32>, tensor<2x4x4xf32> -> tensor<?x8xbf16>
  return
}

// -----

func.func @tf32(%x: tensor<?x8xbf16>, %R: tensor<2x4x4xbf16>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op allow_tf32 applies to f32 operands only, not 'bf16'}}
  %r = rnn.headwise_matmul %x, %R gates 1 allow_tf32 : tensor<?x8xbf16>, tensor<2x4x4xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @result(%x: tensor<?x8xf32>, %R: tensor<2x12x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op result has type 'tensor<?x12xf32>' but 'tensor<?x8xf32>' times the heads of 'tensor<2x12x4xf32>' with gates = 3 gives 'tensor<?x24xf32>'}}
  %r = rnn.headwise_matmul %x, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x12xf32>
  return
}

// -----

func.func @result_transposed(%g: tensor<?x24xf32>, %R: tensor<2x12x4xf32>) {
  // expected-error @+1 {{'rnn.headwise_matmul' op result has type 'tensor<?x24xf32>' but 'tensor<?x24xf32>' times the heads of 'tensor<2x12x4xf32>' transposed with gates = 3 gives 'tensor<?x8xf32>'}}
  %r = rnn.headwise_matmul %g, %R gates 3 transposed : tensor<?x24xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  return
}

// -----

func.func @outer_rank(%g: tensor<24xf32>, %h: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_outer_sum' op lhs has type 'tensor<24xf32>'; expected rows of rank 2 or more with a static last size}}
  %r = rnn.headwise_outer_sum %g, %h gates 3 : tensor<24xf32>, tensor<?x8xf32> -> tensor<2x12x4xf32>
  return
}

// -----

func.func @outer_ranks_differ(%g: tensor<?x?x24xf32>, %h: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_outer_sum' op lhs 'tensor<?x?x24xf32>' and rhs 'tensor<?x8xf32>' must have the same rows (ranks differ)}}
  %r = rnn.headwise_outer_sum %g, %h gates 3 : tensor<?x?x24xf32>, tensor<?x8xf32> -> tensor<2x12x4xf32>
  return
}

// -----

func.func @outer_rows_differ(%g: tensor<3x24xf32>, %h: tensor<4x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_outer_sum' op lhs 'tensor<3x24xf32>' and rhs 'tensor<4x8xf32>' must have the same rows (dimension 0 differs)}}
  %r = rnn.headwise_outer_sum %g, %h gates 3 : tensor<3x24xf32>, tensor<4x8xf32> -> tensor<2x12x4xf32>
  return
}

// -----

func.func @outer_result_rank(%g: tensor<?x24xf32>, %h: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_outer_sum' op result has type 'tensor<24x8xf32>'; expected a static 3-D weight [NH, G·N, K] (each head's [out, in] matrix)}}
  %r = rnn.headwise_outer_sum %g, %h gates 3 : tensor<?x24xf32>, tensor<?x8xf32> -> tensor<24x8xf32>
  return
}

// -----

func.func @outer_widths(%g: tensor<?x20xf32>, %h: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_outer_sum' op result has type 'tensor<2x12x4xf32>' (NH = 2, N = 4, K = 4, gates = 3) but lhs 'tensor<?x20xf32>' should have G·NH·N = 24 columns and rhs 'tensor<?x8xf32>' NH·K = 8}}
  %r = rnn.headwise_outer_sum %g, %h gates 3 : tensor<?x20xf32>, tensor<?x8xf32> -> tensor<2x12x4xf32>
  return
}

// -----

func.func @outer_types(%g: tensor<?x24xbf16>, %h: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.headwise_outer_sum' op operand element types differ: lhs 'tensor<?x24xbf16>', rhs 'tensor<?x8xf32>'}}
  %r = rnn.headwise_outer_sum %g, %h gates 3 : tensor<?x24xbf16>, tensor<?x8xf32> -> tensor<2x12x4xf32>
  return
}
