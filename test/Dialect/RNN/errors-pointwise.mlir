// Every diagnostic of rnn.pointwise and the ops of its body.
// RUN: rnn-opt %s -split-input-file -verify-diagnostics

func.func @reads_mismatch(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op has 1 read operands but 2 read offsets}}
  %r = "rnn.pointwise"(%a) <{read_operands = array<i64: 0>, read_offsets = array<i64: 0, 0>}> ({
  ^bb0(%x: f32):
    rnn.pointwise_yield %x : f32
  }) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @no_result(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op must have at least one result}}
  "rnn.pointwise"(%a) <{read_operands = array<i64: 0>, read_offsets = array<i64: 0>}> ({
  ^bb0(%x: f32):
    "rnn.pointwise_yield"() : () -> ()
  }) : (tensor<?x4xf32>) -> ()
  return
}

// -----

func.func @scalar_result(%a: tensor<f32>) {
  // expected-error @+1 {{'rnn.pointwise' op result 'tensor<f32>' must have rank 1 or more}}
  %r = rnn.pointwise(%a) : tensor<f32> -> tensor<f32> {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @result_shapes(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op result #1 has type 'tensor<?x8xf32>' but result #0 has type 'tensor<?x4xf32>'; all results share one iteration space}}
  %r:2 = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x8xf32> {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x, %x : f32, f32
  }
  return
}

// -----

func.func @read_index(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op read #1 names operand #3 of 1}}
  %r = "rnn.pointwise"(%a) <{read_operands = array<i64: 0, 3>, read_offsets = array<i64: 0, 0>}> ({
  ^bb0(%x: f32, %y: f32):
    rnn.pointwise_yield %x : f32
  }) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @read_window(%g: tensor<?x16xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op read #0 at offset 14 of 'tensor<?x16xf32>' does not fit 4 columns of the iteration space 'tensor<?x4xf32>'}}
  %r = rnn.pointwise(%g[14]) : tensor<?x16xf32> -> tensor<?x4xf32> {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @read_broadcast_offset(%s: tensor<?x1xf32>, %a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op read #1 of 'tensor<?x1xf32>' broadcasts along the last axis; its offset 2 must be 0}}
  %r = rnn.pointwise(%a, %s[2]) : tensor<?x4xf32>, tensor<?x1xf32> -> tensor<?x4xf32> {
  ^bb0(%x: f32, %y: f32):
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @read_batch(%a: tensor<3x4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op read #1 of 'tensor<2x4xf32>' does not broadcast to the iteration space 'tensor<3x4xf32>'}}
  %r = rnn.pointwise(%a, %b) : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x4xf32> {
  ^bb0(%x: f32, %y: f32):
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @unread(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op operand #1 is never read}}
  %r = "rnn.pointwise"(%a, %b) <{read_operands = array<i64: 0>, read_offsets = array<i64: 0>}> ({
  ^bb0(%x: f32):
    rnn.pointwise_yield %x : f32
  }) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @body_arguments(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op body has 2 arguments but the op has 1 reads}}
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%x: f32, %y: f32):
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @body_argument_type(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op body argument #0 has type 'bf16' but read #0 yields 'f32'}}
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xbf16> {
  ^bb0(%x: bf16):
    rnn.pointwise_yield %x : bf16
  }
  return
}

// -----

func.func @not_scalar(%a: tensor<?x4xf32>) {
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%x: f32):
    // expected-error @+1 {{'rnn.constant' op is not scalar arithmetic; the body of rnn.pointwise holds arith and math ops on scalars, rnn.row_sum and rnn.row_max}}
    %c = rnn.constant 1.0 : tensor<f32>
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @yield_count(%a: tensor<?x4xf32>) {
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%x: f32):
    // expected-error @+1 {{'rnn.pointwise_yield' op yields 2 values but rnn.pointwise has 1 results}}
    rnn.pointwise_yield %x, %x : f32, f32
  }
  return
}

// -----

func.func @yield_type(%a: tensor<?x4xf32>) {
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf16> {
  ^bb0(%x: f32):
    // expected-error @+1 {{'rnn.pointwise_yield' op value #0 has type 'f32' but result #0 has element type 'f16'}}
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @row_sum_outside(%x: f32) {
  // expected-error @+1 {{'rnn.row_sum' op expects parent op 'rnn.pointwise'}}
  %s = rnn.row_sum %x : f32
  return
}

// -----

func.func @pieces_entries(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op has 1 results but result_pieces has 2 entries}}
  %r = "rnn.pointwise"(%a) <{read_operands = array<i64: 0>, read_offsets = array<i64: 0>, result_pieces = array<i64: 1, 2>}> ({
  ^bb0(%x: f32):
    rnn.pointwise_yield %x : f32
  }) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @pieces_count(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op result #0 has 0 pieces; a result has 1 or more}}
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32> pieces 0 {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x : f32
  }
  return
}

// -----

func.func @pieces_width(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op result #0 has type 'tensor<?x6xf32>', whose last dimension is not 4 pieces of one width}}
  %r = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x6xf32> pieces 4 {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x, %x, %x, %x : f32, f32, f32, f32
  }
  return
}

// -----

func.func @pieces_result_width(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op result #1 has type 'tensor<?x8xf32>' but 3 pieces of the iteration space 'tensor<?x4xf32>' make 'tensor<?x12xf32>'}}
  %r:2 = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x16xf32> pieces 4, tensor<?x8xf32> pieces 3 {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x, %x, %x, %x, %x, %x, %x : f32, f32, f32, f32, f32, f32, f32
  }
  return
}

// -----

func.func @pieces_narrow_result(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.pointwise' op result #1 has type 'tensor<?x8xf32>' but 1 piece of the iteration space 'tensor<?x4xf32>' makes 'tensor<?x4xf32>'}}
  %r:2 = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x8xf32> pieces 2, tensor<?x8xf32> {
  ^bb0(%x: f32):
    rnn.pointwise_yield %x, %x, %x : f32, f32, f32
  }
  return
}

// -----

func.func @pieces_yield_count(%a: tensor<?x4xf32>) {
  %r:2 = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x16xf32> pieces 4, tensor<?x4xf32> {
  ^bb0(%x: f32):
    // expected-error @+1 {{'rnn.pointwise_yield' op yields 2 values but rnn.pointwise has 2 results of 5 pieces in all; a result of k pieces takes k values}}
    rnn.pointwise_yield %x, %x : f32, f32
  }
  return
}

// -----

func.func @pieces_yield_type(%a: tensor<?x4xf32>) {
  %r:2 = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32>, tensor<?x8xbf16> pieces 2 {
  ^bb0(%x: f32):
    %h = arith.truncf %x : f32 to bf16
    // expected-error @+1 {{'rnn.pointwise_yield' op value #2 has type 'f32' but result #1 (piece #1 of 2) has element type 'bf16'}}
    rnn.pointwise_yield %x, %h, %x : f32, bf16, f32
  }
  return
}
