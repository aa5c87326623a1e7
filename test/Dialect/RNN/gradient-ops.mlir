// The ops the derived backward builds, printed and parsed back, in the
// pretty and the generic form, and every diagnostic of their verifiers.
// RUN: rnn-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: rnn-opt %s -split-input-file -verify-diagnostics --mlir-print-op-generic | rnn-opt -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @gradient_ops
func.func @gradient_ops(%xs: tensor<?x?x6xf32>, %g: tensor<?x?x8xf32>, %h: tensor<?x6xbf16>,
                        %d: tensor<?x8xbf16>) -> (tensor<8x6xf32>, tensor<8xf32>, tensor<?x1xf32>,
                                                  tensor<8x6xf32>, tensor<f32>, tensor<?x?x6xf32>) {
  // CHECK: rnn.outer_sum %{{.*}}, %{{.*}} allow_tf32 : tensor<?x?x8xf32>, tensor<?x?x6xf32> -> tensor<8x6xf32>
  %dw = rnn.outer_sum %g, %xs allow_tf32 : tensor<?x?x8xf32>, tensor<?x?x6xf32> -> tensor<8x6xf32>
  // CHECK: rnn.outer_sum %{{.*}}, %{{.*}} : tensor<?x8xbf16>, tensor<?x6xbf16> -> tensor<8x6xf32>
  %dv = rnn.outer_sum %d, %h : tensor<?x8xbf16>, tensor<?x6xbf16> -> tensor<8x6xf32>
  // CHECK: rnn.sum_to %{{.*}} : tensor<?x?x8xf32> -> tensor<8xf32>
  %db = rnn.sum_to %g : tensor<?x?x8xf32> -> tensor<8xf32>
  %row = rnn.reduce_sum %xs : tensor<?x?x6xf32>
  %one = rnn.sum_to %row : tensor<?x?x1xf32> -> tensor<?x1xf32>
  // CHECK: rnn.sum_to %{{.*}} : tensor<?x?x8xf32> -> tensor<f32>
  %all = rnn.sum_to %g : tensor<?x?x8xf32> -> tensor<f32>
  // A 16-bit input sums in f32.
  // CHECK: rnn.sum_to %{{.*}} : tensor<?x8xbf16> -> tensor<8xf32>
  %db16 = rnn.sum_to %d : tensor<?x8xbf16> -> tensor<8xf32>
  // CHECK: rnn.heaviside %{{.*}} {at_zero = 5.000000e-01 : f64} : tensor<?x?x6xf32>
  %step = rnn.heaviside %xs {at_zero = 0.5 : f64} : tensor<?x?x6xf32>
  // CHECK: rnn.heaviside %{{.*}} : tensor<?x?x6xf32>
  %relu_grad = rnn.heaviside %step : tensor<?x?x6xf32>
  // CHECK: rnn.zeros_like %{{.*}} : tensor<?x?x6xf32>
  %z = rnn.zeros_like %relu_grad : tensor<?x?x6xf32>
  return %dw, %db, %one, %dv, %all, %z : tensor<8x6xf32>, tensor<8xf32>, tensor<?x1xf32>, tensor<8x6xf32>, tensor<f32>, tensor<?x?x6xf32>
}

// CHECK-LABEL: func.func @previous_states
func.func @previous_states(%ys: tensor<?x?x6xf32>, %h0: tensor<?x6xf32>, %len: tensor<?xi64>)
    -> (tensor<?x?x6xf32>, tensor<?x?x6xf32>) {
  // CHECK: rnn.previous_states %{{.*}}, %{{.*}} : tensor<?x?x6xf32>, tensor<?x6xf32>
  %a = rnn.previous_states %ys, %h0 : tensor<?x?x6xf32>, tensor<?x6xf32>
  // CHECK: rnn.previous_states %{{.*}}, %{{.*}} reverse lengths(%{{.*}} : tensor<?xi64>) : tensor<?x?x6xf32>, tensor<?x6xf32>
  %b = rnn.previous_states %ys, %h0 reverse lengths(%len : tensor<?xi64>) : tensor<?x?x6xf32>, tensor<?x6xf32>
  return %a, %b : tensor<?x?x6xf32>, tensor<?x?x6xf32>
}

// -----

func.func @sum_to_not_broadcast(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.sum_to' op result 'tensor<4xf32>' does not broadcast to the input 'tensor<?x8xf32>': aligned at the trailing dimension, each result size must equal the input's or be 1}}
  %r = rnn.sum_to %x : tensor<?x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @sum_to_element(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'rnn.sum_to' op result 'tensor<8xf64>' must have the element type of the input 'tensor<?x8xf32>' (or f32 for an f16 or bf16 input)}}
  %r = rnn.sum_to %x : tensor<?x8xf32> -> tensor<8xf64>
  return
}

// -----

func.func @sum_to_narrower(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{'rnn.sum_to' op result 'tensor<8xf16>' must have the element type of the input 'tensor<?x8xbf16>' (or f32 for an f16 or bf16 input)}}
  %r = rnn.sum_to %x : tensor<?x8xbf16> -> tensor<8xf16>
  return
}

// -----

func.func @outer_sum_rank(%a: tensor<8xf32>, %b: tensor<?x6xf32>) {
  // expected-error @+1 {{'rnn.outer_sum' op lhs has type 'tensor<8xf32>'; expected rows [..., N] of rank 2 or more with a static last size}}
  %r = rnn.outer_sum %a, %b : tensor<8xf32>, tensor<?x6xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @outer_sum_ranks_differ(%a: tensor<?x?x8xf32>, %b: tensor<?x6xf32>) {
  // expected-error @+1 {{'rnn.outer_sum' op lhs 'tensor<?x?x8xf32>' and rhs 'tensor<?x6xf32>' must have the same rows (ranks differ)}}
  %r = rnn.outer_sum %a, %b : tensor<?x?x8xf32>, tensor<?x6xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @outer_sum_rows_differ(%a: tensor<3x8xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{'rnn.outer_sum' op lhs 'tensor<3x8xf32>' and rhs 'tensor<4x6xf32>' must have the same rows (dimension 0 differs)}}
  %r = rnn.outer_sum %a, %b : tensor<3x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @outer_sum_elements(%a: tensor<?x8xf32>, %b: tensor<?x6xf64>) {
  // expected-error @+1 {{'rnn.outer_sum' op operand element types differ: lhs 'tensor<?x8xf32>', rhs 'tensor<?x6xf64>'}}
  %r = rnn.outer_sum %a, %b : tensor<?x8xf32>, tensor<?x6xf64> -> tensor<8x6xf32>
  return
}

// -----

func.func @outer_sum_result_element(%a: tensor<?x8xf64>, %b: tensor<?x6xf64>) {
  // expected-error @+1 {{'rnn.outer_sum' op result element type 'f32' must be the operands' 'f64' (or f32 for f16/bf16 operands)}}
  %r = rnn.outer_sum %a, %b : tensor<?x8xf64>, tensor<?x6xf64> -> tensor<8x6xf32>
  return
}

// -----

func.func @outer_sum_tf32(%a: tensor<?x8xf64>, %b: tensor<?x6xf64>) {
  // expected-error @+1 {{'rnn.outer_sum' op allow_tf32 applies to f32 operands only, not 'f64'}}
  %r = rnn.outer_sum %a, %b allow_tf32 : tensor<?x8xf64>, tensor<?x6xf64> -> tensor<8x6xf64>
  return
}

// -----

func.func @outer_sum_shape(%a: tensor<?x8xf32>, %b: tensor<?x6xf32>) {
  // expected-error @+1 {{'rnn.outer_sum' op result has type 'tensor<6x8xf32>' but the outer products of 'tensor<?x8xf32>' and 'tensor<?x6xf32>' are 'tensor<8x6xf32>'}}
  %r = rnn.outer_sum %a, %b : tensor<?x8xf32>, tensor<?x6xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @previous_states_rank(%ys: tensor<?x6xf32>, %h0: tensor<?x6xf32>) {
  // expected-error @+1 {{'rnn.previous_states' op sequence has type 'tensor<?x6xf32>'; expected [T, B, N] with a static N}}
  %r = rnn.previous_states %ys, %h0 : tensor<?x6xf32>, tensor<?x6xf32>
  return
}

// -----

func.func @previous_states_init(%ys: tensor<?x?x6xf32>, %h0: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.previous_states' op init has type 'tensor<?x4xf32>'; expected 'tensor<?x6xf32>' for the sequence 'tensor<?x?x6xf32>'}}
  %r = rnn.previous_states %ys, %h0 : tensor<?x?x6xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @previous_states_lengths(%ys: tensor<?x3x6xf32>, %h0: tensor<3x6xf32>, %len: tensor<4xi32>) {
  // expected-error @+1 {{'rnn.previous_states' op lengths 'tensor<4xi32>' do not have one entry per row of 'tensor<?x3x6xf32>'}}
  %r = rnn.previous_states %ys, %h0 lengths(%len : tensor<4xi32>) : tensor<?x3x6xf32>, tensor<3x6xf32>
  return
}
