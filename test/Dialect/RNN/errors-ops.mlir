// Every diagnostic of the ops used inside cells.
// RUN: rnn-opt %s -split-input-file -verify-diagnostics

func.func @matmul_lhs_rank(%x: tensor<8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'rnn.matmul' op lhs has type 'tensor<8xf32>'; expected rows [..., K] of rank 2 or more with a static K}}
  %r = rnn.matmul %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_acc_type(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %acc: tensor<?x5xf32>) {
  // expected-error @+1 {{'rnn.matmul' op acc has type 'tensor<?x5xf32>' but the result has type 'tensor<?x4xf32>'}}
  %r = rnn.matmul %x, %w acc %acc : tensor<?x8xf32>, tensor<4x8xf32>, tensor<?x5xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @matmul_rhs_dynamic(%x: tensor<?x8xf32>, %w: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.matmul' op rhs has type 'tensor<?x8xf32>'; expected a static 2-D weight [N, K] (PyTorch's [out, in])}}
  %r = rnn.matmul %x, %w : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @matmul_k(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'rnn.matmul' op contraction sizes differ: lhs 'tensor<?x8xf32>' has K = 8 but rhs 'tensor<8x4xf32>' laid out [N, K] (PyTorch's [out, in]) has K = 4}}
  %r = rnn.matmul %x, %w : tensor<?x8xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @matmul_k_in_out(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'rnn.matmul' op contraction sizes differ: lhs 'tensor<?x8xf32>' has K = 8 but rhs 'tensor<4x8xf32>' laid out [K, N] (weight_in_out) has K = 4}}
  %r = rnn.matmul %x, %w weight_in_out : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @matmul_mixed(%x: tensor<?x8xf32>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{'rnn.matmul' op operand element types differ: lhs 'tensor<?x8xf32>', rhs 'tensor<4x8xbf16>'}}
  %r = rnn.matmul %x, %w : tensor<?x8xf32>, tensor<4x8xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @matmul_narrowing(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'rnn.matmul' op result element type 'bf16' must be the operands' 'f32' (or f32 for f16/bf16 operands)}}
  %r = rnn.matmul %x, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xbf16>
  return
}

// -----

func.func @matmul_tf32(%x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{'rnn.matmul' op allow_tf32 applies to f32 operands only, not 'bf16'}}
  %r = rnn.matmul %x, %w allow_tf32 : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x4xf32>
  return
}

// -----

func.func @matmul_result(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'rnn.matmul' op result has type 'tensor<?x8xf32>' but 'tensor<?x8xf32>' times 'tensor<4x8xf32>' laid out [N, K] (PyTorch's [out, in]) gives 'tensor<?x4xf32>'}}
  %r = rnn.matmul %x, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @binary_element_types(%a: tensor<?x4xf32>, %b: tensor<?x4xf16>) {
  // expected-error @+1 {{'rnn.add' op operand element types differ: lhs 'tensor<?x4xf32>', rhs 'tensor<?x4xf16>' (use rnn.cast)}}
  %r = rnn.add %a, %b : tensor<?x4xf32>, tensor<?x4xf16>
  return
}

// -----

func.func @binary_broadcast(%a: tensor<?x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'rnn.mul' op operands 'tensor<?x4xf32>' and 'tensor<8xf32>' do not broadcast: aligned at the trailing dimension, each pair of sizes must be equal or one of them 1}}
  %r = rnn.mul %a, %b : tensor<?x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @binary_dynamic_batch(%a: tensor<?x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'rnn.sub' op operands 'tensor<?x4xf32>' and 'tensor<3x4xf32>' do not broadcast}}
  %r = rnn.sub %a, %b : tensor<?x4xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @binary_result_type(%a: tensor<?x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'rnn.div' op inferred type(s) 'tensor<?x4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'rnn.div' op failed to infer returned types}}
  %r = "rnn.div"(%a, %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_type(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.tanh' op requires the same type for all operands and results}}
  %r = "rnn.tanh"(%a) : (tensor<?x4xf32>) -> tensor<?x4xf16>
  return
}

// -----

func.func @integer_operand(%a: tensor<?x4xi32>) {
  // expected-error @+1 {{'rnn.sigmoid' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<?x4xi32>'}}
  %r = rnn.sigmoid %a : tensor<?x4xi32>
  return
}

// -----

func.func @constant_dynamic() {
  // expected-error @+1 {{'rnn.constant' op result type 'tensor<?xf32>' must have a static shape}}
  %c = rnn.constant 1.0 : tensor<?xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.cast' op changes the shape from 'tensor<?x4xf32>' to 'tensor<?x8xbf16>'; a cast only converts elements}}
  %r = rnn.cast %a : tensor<?x4xf32> to tensor<?x8xbf16>
  return
}

// -----

func.func @split_sizes(%a: tensor<?x12xf32>) {
  // expected-error @+1 {{'rnn.split' op the results add up to 8 along axis 1 but 'tensor<?x12xf32>' has 12}}
  %p, %q = rnn.split %a : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @split_off_axis(%a: tensor<?x12xf32>) {
  // expected-error @+1 {{'rnn.split' op result #1 has type 'tensor<2x6xf32>', which differs from 'tensor<?x12xf32>' in element type, rank or a dimension other than axis 1}}
  %p, %q = rnn.split %a : tensor<?x12xf32> -> tensor<?x6xf32>, tensor<2x6xf32>
  return
}

// -----

func.func @split_axis_range(%a: tensor<?x12xf32>) {
  // expected-error @+1 {{'rnn.split' op axis 2 is out of range for 'tensor<?x12xf32>'}}
  %p, %q = rnn.split %a axis 2 : tensor<?x12xf32> -> tensor<?x6xf32>, tensor<?x6xf32>
  return
}

// -----

func.func @split_dynamic_axis(%a: tensor<?x12xf32>) {
  // expected-error @+1 {{'rnn.split' op axis 0 of 'tensor<?x12xf32>' must be static}}
  %p, %q = rnn.split %a axis 0 : tensor<?x12xf32> -> tensor<?x12xf32>, tensor<?x12xf32>
  return
}

// -----

func.func @split_none(%a: tensor<?x12xf32>) {
  // expected-error @+1 {{'rnn.split' op needs at least one result}}
  "rnn.split"(%a) : (tensor<?x12xf32>) -> ()
  return
}

// -----

func.func @concat_sizes(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.concat' op the operands add up to 8 along axis 1 but 'tensor<?x9xf32>' has 9}}
  %r = rnn.concat %a, %b : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x9xf32>
  return
}

// -----

func.func @concat_element(%a: tensor<?x4xf32>, %b: tensor<?x4xf16>) {
  // expected-error @+1 {{'rnn.concat' op operand #1 has type 'tensor<?x4xf16>', which differs from 'tensor<?x8xf32>' in element type, rank or a dimension other than axis 1}}
  %r = rnn.concat %a, %b : tensor<?x4xf32>, tensor<?x4xf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @concat_dynamic_piece(%a: tensor<?x4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.concat' op operand #0 has type 'tensor<?x4xf32>'; axis 0 must be static}}
  %r = rnn.concat %a, %b axis 0 : tensor<?x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @concat_none() {
  // expected-error @+1 {{'rnn.concat' op needs at least one operand}}
  %r = "rnn.concat"() : () -> tensor<4xf32>
  return
}

// -----

func.func @reduce_dynamic(%a: tensor<?x?xf32>) {
  // expected-error @+1 {{'rnn.reduce_mean' op input 'tensor<?x?xf32>' must have a static last (feature) axis}}
  %r = rnn.reduce_mean %a : tensor<?x?xf32>
  return
}

// -----

func.func @reduce_result(%a: tensor<?x4xf32>) {
  // expected-error @+2 {{'rnn.reduce_sum' op inferred type(s) 'tensor<?x1xf32>' are incompatible with return type(s) of operation 'tensor<?xf32>'}}
  // expected-error @+1 {{'rnn.reduce_sum' op failed to infer returned types}}
  %r = "rnn.reduce_sum"(%a) : (tensor<?x4xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @layer_norm_dynamic(%a: tensor<4x?xf32>) {
  // expected-error @+1 {{'rnn.layer_norm' op input 'tensor<4x?xf32>' must have a static last (feature) axis}}
  %r = rnn.layer_norm %a : tensor<4x?xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.layer_norm' op epsilon must be positive, got 0}}
  %r = rnn.layer_norm %a {epsilon = 0.0 : f64} : tensor<?x4xf32>
  return
}

// -----

func.func @select_element_type(%x: tensor<?x4xf32>, %y: tensor<?x4xf64>) {
  // expected-error @+1 {{'rnn.select' op operand on_true has type 'tensor<?x4xf64>' but lhs has element type 'f32' (use rnn.cast)}}
  %r = rnn.select lt %x, %x, %y, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf64>, tensor<?x4xf32>
  return
}

// -----

func.func @select_broadcast(%x: tensor<?x4xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'rnn.select' op operands 'tensor<?x4xf32>', 'tensor<?x4xf32>', 'tensor<?x4xf32>' and 'tensor<8xf32>' do not broadcast (at operand on_false): aligned at the trailing dimension, each set of sizes must be equal or 1}}
  %r = rnn.select le %x, %x, %x, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @select_predicate(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{custom op 'rnn.select' expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %r = rnn.select above %x, %x, %x, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @transpose_length(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'rnn.transpose' op permutation has 2 entries but the input 'tensor<?x?x4xf32>' has rank 3}}
  %r = rnn.transpose %x permutation [1, 0] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  return
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'rnn.transpose' op permutation [1, 1, 2] is not a permutation of 0..2}}
  %r = rnn.transpose %x permutation [1, 1, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<?x3x4xf32>) {
  // expected-error @+1 {{'rnn.transpose' op result 'tensor<?x3x4xf32>' is not input 'tensor<?x3x4xf32>' permuted by [1, 0, 2]: dimension 0 must be the input's 1}}
  %r = rnn.transpose %x permutation [1, 0, 2] : tensor<?x3x4xf32> -> tensor<?x3x4xf32>
  return
}

// -----

func.func @transpose_element_type(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.transpose' op result 'tensor<4x?xf64>' must have the rank and element type of the input 'tensor<?x4xf32>'}}
  %r = rnn.transpose %x permutation [1, 0] : tensor<?x4xf32> -> tensor<4x?xf64>
  return
}

// -----

func.func @reshape_merges(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'rnn.reshape' op cannot reshape 'tensor<?x?x4xf32>' to 'tensor<?x4xf32>': only dimensions of size 1 may be inserted or removed (the other dimensions, in order, must be the same; '?' matches only '?')}}
  %r = rnn.reshape %x : tensor<?x?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'rnn.reshape' op result 'tensor<4xbf16>' must have the element type of the input 'tensor<1x4xf32>'}}
  %r = rnn.reshape %x : tensor<1x4xf32> -> tensor<4xbf16>
  return
}
