// Every diagnostic of rnn.cell, rnn.yield, rnn.scan and rnn.step.
// RUN: rnn-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

// expected-error @+1 {{'rnn.cell' op must take at least one per-step input}}
rnn.cell @no_input inputs() states(%h: tensor<?x4xf32>) {
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op must carry at least one state}}
rnn.cell @no_state inputs(%x: tensor<?x4xf32>) states() -> (tensor<?x4xf32>) {
  "rnn.yield"(%x) <{operandSegmentSizes = array<i32: 1, 0>}> : (tensor<?x4xf32>) -> ()
}

// -----

// expected-error @+1 {{'rnn.cell' op declares 1 inputs and 2 states but its type has only 2 arguments}}
"rnn.cell"() <{sym_name = "c", function_type = (tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>), num_inputs = 1 : i64, num_states = 2 : i64}> ({
^bb0(%x: tensor<?x4xf32>, %h: tensor<?x4xf32>):
  "rnn.yield"(%h, %h) <{operandSegmentSizes = array<i32: 0, 2>}> : (tensor<?x4xf32>, tensor<?x4xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'rnn.cell' op declares 2 states but its type has only 1 results}}
"rnn.cell"() <{sym_name = "c", function_type = (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>), num_inputs = 1 : i64, num_states = 2 : i64}> ({
^bb0(%x: tensor<?x4xf32>, %h: tensor<?x4xf32>, %c: tensor<?x4xf32>):
  "rnn.yield"(%h) <{operandSegmentSizes = array<i32: 0, 1>}> : (tensor<?x4xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'rnn.cell' op result type of state #0 is 'tensor<?x5xf32>' but the state is 'tensor<?x4xf32>'}}
"rnn.cell"() <{sym_name = "c", function_type = (tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x5xf32>), num_inputs = 1 : i64, num_states = 1 : i64}> ({
^bb0(%x: tensor<?x4xf32>, %h: tensor<?x4xf32>):
  "rnn.yield"(%h) <{operandSegmentSizes = array<i32: 0, 1>}> : (tensor<?x4xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'rnn.cell' op input #0 has type 'tensor<?x?xf32>'; expected a [B, N] tensor with a static feature size N}}
rnn.cell @dynamic_feature inputs(%x: tensor<?x?xf32>) states(%h: tensor<?x4xf32>) {
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op state #0 has type 'tensor<2x3x4xf32>'; expected a [B, N] tensor with a static feature size N}}
rnn.cell @rank3_state inputs(%x: tensor<2x4xf32>) states(%h: tensor<2x3x4xf32>) {
  rnn.yield states(%h : tensor<2x3x4xf32>)
}

// -----

// A hidden size of 0: nothing to compute, and no lowering of it.
// expected-error @+1 {{'rnn.cell' op state #0 has type 'tensor<?x0xf32>'; its feature size must be positive (a zero-size feature leaves the cell nothing to compute)}}
rnn.cell @zero_hidden inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x0xf32>) {
  rnn.yield states(%h : tensor<?x0xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op input #0 has type 'tensor<?x0xf32>'; its feature size must be positive}}
rnn.cell @zero_input inputs(%x: tensor<?x0xf32>) states(%h: tensor<?x4xf32>) {
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op batch size disagrees: input #0 has ? but state #0 has 8}}
rnn.cell @batch inputs(%x: tensor<?x4xf32>) states(%h: tensor<8x4xf32>) {
  rnn.yield states(%h : tensor<8x4xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op batch size disagrees: input #0 has 8 but output #0 has 7}}
rnn.cell @batch_out inputs(%x: tensor<8x4xf32>) states(%h: tensor<8x4xf32>) -> (tensor<7x4xf32>) {
  %y = "test.make"() : () -> tensor<7x4xf32>
  rnn.yield outputs(%y : tensor<7x4xf32>) states(%h : tensor<8x4xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op parameter #1 has type 'tensor<?x4xf32>'; parameters must be statically shaped tensors}}
rnn.cell @dynamic_param inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%a: tensor<4xf32>, %b: tensor<?x4xf32>) {
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

// expected-error @+1 {{'rnn.cell' op body has 1 arguments but the cell's type has 2}}
"rnn.cell"() <{sym_name = "c", function_type = (tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>), num_inputs = 1 : i64, num_states = 1 : i64}> ({
^bb0(%x: tensor<?x4xf32>):
  "rnn.yield"(%x) <{operandSegmentSizes = array<i32: 0, 1>}> : (tensor<?x4xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'rnn.cell' op body argument #1 has type 'tensor<?x5xf32>' but the cell's type says 'tensor<?x4xf32>'}}
"rnn.cell"() <{sym_name = "c", function_type = (tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>), num_inputs = 1 : i64, num_states = 1 : i64}> ({
^bb0(%x: tensor<?x4xf32>, %h: tensor<?x5xf32>):
  "rnn.yield"(%x) <{operandSegmentSizes = array<i32: 0, 1>}> : (tensor<?x4xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'rnn.cell' op body must end with rnn.yield}}
rnn.cell @no_yield inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) {
  "test.terminator"() : () -> ()
}

// -----

rnn.cell @outputs_count inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.yield' op yields 0 outputs but cell @outputs_count declares 1}}
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

rnn.cell @output_type inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = "test.make"() : () -> tensor<?x4xf16>
  // expected-error @+1 {{'rnn.yield' op output #0 has type 'tensor<?x4xf16>' but cell @output_type declares 'tensor<?x4xf32>'}}
  rnn.yield outputs(%y : tensor<?x4xf16>) states(%h : tensor<?x4xf32>)
}

// -----

rnn.cell @states_count inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.yield' op yields 1 new states but cell @states_count carries 2}}
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

rnn.cell @state_type inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.yield' op new state #0 has type 'tensor<?x8xf32>' but the state is 'tensor<?x4xf32>'; a state keeps its type across the step}}
  rnn.yield states(%x : tensor<?x8xf32>)
}

// -----

func.func @yield_outside(%h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.yield' op expects parent op 'rnn.cell'}}
  rnn.yield states(%h : tensor<?x4xf32>)
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @scan_unknown(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op refers to an unknown cell @nope}}
  %ys, %hT = rnn.scan @nope inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      -> outputs(tensor<3x?x4xf32>) states(tensor<?x4xf32>)
  return
}

// -----

func.func @not_a_cell(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op refers to @not_a_cell, which is a 'func.func', not an rnn.cell}}
  %hT = rnn.scan @not_a_cell inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      -> states(tensor<?x4xf32>)
  return
}

// -----

func.func @scan_no_inputs(%h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op needs at least one input sequence}}
  %hT = "rnn.scan"(%h) <{cell = @id, operandSegmentSizes = array<i32: 0, 1, 0, 0>, resultSegmentSizes = array<i32: 0, 1>}> : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @scan_rank(%xs: tensor<?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op input #0 has type 'tensor<?x4xf32>'; expected a [T, B, N] sequence}}
  %hT = rnn.scan @id inputs(%xs : tensor<?x4xf32>) init(%h : tensor<?x4xf32>) -> states(tensor<?x4xf32>)
  return
}

// -----

func.func @scan_init_rank(%xs: tensor<3x?x4xf32>, %h: tensor<3x?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op init #0 has type 'tensor<3x?x4xf32>'; expected a [B, N] tensor}}
  %hT = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<3x?x4xf32>) -> states(tensor<3x?x4xf32>)
  return
}

// -----

func.func @scan_length(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op sequence length disagrees: input #0 has 3 but output #0 has 5}}
  %ys, %hT = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      -> outputs(tensor<5x?x4xf32>) states(tensor<?x4xf32>)
  return
}

// -----

func.func @scan_batch(%xs: tensor<3x2x4xf32>, %h: tensor<3x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op batch size disagrees: input #0 has 2 but init #0 has 3}}
  %hT = rnn.scan @id inputs(%xs : tensor<3x2x4xf32>) init(%h : tensor<3x4xf32>) -> states(tensor<3x4xf32>)
  return
}

// -----

func.func @scan_lengths_batch(%xs: tensor<3x2x4xf32>, %h: tensor<2x4xf32>, %len: tensor<5xi32>) {
  // expected-error @+1 {{'rnn.scan' op batch size disagrees: input #0 has 2 but lengths has 5}}
  %hT = rnn.scan @id inputs(%xs : tensor<3x2x4xf32>) init(%h : tensor<2x4xf32>)
      lengths(%len : tensor<5xi32>) -> states(tensor<2x4xf32>)
  return
}

// -----

func.func @scan_lengths_type(%xs: tensor<3x2x4xf32>, %h: tensor<2x4xf32>, %len: tensor<2xf32>) {
  // expected-error @+1 {{'rnn.scan' op operand #2 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %hT = "rnn.scan"(%xs, %h, %len) <{cell = @id, operandSegmentSizes = array<i32: 1, 1, 0, 1>, resultSegmentSizes = array<i32: 0, 1>}> : (tensor<3x2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @scan_final_count(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op has 1 initial states but 2 final states}}
  %a, %b = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      -> states(tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @scan_final_type(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op final state #0 has type 'tensor<?x4xf16>' but its initial state is 'tensor<?x4xf32>'}}
  %a = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      -> states(tensor<?x4xf16>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @scan_input_count(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op has 2 inputs but cell @id has 1 inputs}}
  %ys, %hT = rnn.scan @id inputs(%xs, %xs : tensor<3x?x4xf32>, tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      -> outputs(tensor<3x?x4xf32>) states(tensor<?x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @scan_input_feature(%xs: tensor<3x?x6xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op input #0 has type 'tensor<3x?x6xf32>' but cell @id expects a sequence of 'tensor<?x4xf32>'}}
  %ys, %hT = rnn.scan @id inputs(%xs : tensor<3x?x6xf32>) init(%h : tensor<?x4xf32>)
      -> outputs(tensor<3x?x4xf32>) states(tensor<?x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @scan_state_count(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op has 2 inits but cell @id has 1 states}}
  %ys, %a, %b = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h, %h : tensor<?x4xf32>, tensor<?x4xf32>)
      -> outputs(tensor<3x?x4xf32>) states(tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @scan_state_dtype(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xbf16>) {
  // expected-error @+1 {{'rnn.scan' op init #0 has type 'tensor<?x4xbf16>' but cell @id expects 'tensor<?x4xf32>'}}
  %ys, %hT = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xbf16>)
      -> outputs(tensor<3x?x4xf32>) states(tensor<?x4xbf16>)
  return
}

// -----

rnn.cell @fixed inputs(%x: tensor<2x4xf32>) states(%h: tensor<2x4xf32>) {
  rnn.yield states(%h : tensor<2x4xf32>)
}

func.func @scan_static_batch(%xs: tensor<3x5x4xf32>, %h: tensor<5x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op input #0 has type 'tensor<3x5x4xf32>' but cell @fixed expects a sequence of 'tensor<2x4xf32>'}}
  %hT = rnn.scan @fixed inputs(%xs : tensor<3x5x4xf32>) init(%h : tensor<5x4xf32>) -> states(tensor<5x4xf32>)
  return
}

// -----

rnn.cell @with_param inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%w: tensor<4x4xf32>) {
  rnn.yield states(%h : tensor<?x4xf32>)
}

func.func @scan_param_count(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op passes 0 params but cell @with_param takes 1}}
  %hT = rnn.scan @with_param inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>) -> states(tensor<?x4xf32>)
  return
}

// -----

rnn.cell @with_param inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%w: tensor<4x4xf32>) {
  rnn.yield states(%h : tensor<?x4xf32>)
}

func.func @scan_param_type(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'rnn.scan' op param #0 has type 'tensor<4x8xf32>' but cell @with_param takes 'tensor<4x4xf32>'}}
  %hT = rnn.scan @with_param inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>)
      params(%w : tensor<4x8xf32>) -> states(tensor<?x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @scan_output_count(%xs: tensor<3x?x4xf32>, %h: tensor<?x4xf32>) {
  // expected-error @+1 {{'rnn.scan' op has 0 outputs but cell @id has 1 outputs}}
  %hT = rnn.scan @id inputs(%xs : tensor<3x?x4xf32>) init(%h : tensor<?x4xf32>) -> states(tensor<?x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @step_state_count(%x: tensor<2x4xf32>, %h: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.step' op has 2 states but 1 new states}}
  %y, %h1 = rnn.step @id inputs(%x : tensor<2x4xf32>) states(%h, %h : tensor<2x4xf32>, tensor<2x4xf32>)
      -> outputs(tensor<2x4xf32>) states(tensor<2x4xf32>)
  return
}

// -----

func.func @step_new_state_type(%x: tensor<2x4xf32>, %h: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.step' op new state #0 has type 'tensor<2x4xf16>' but the state is 'tensor<2x4xf32>'}}
  %h1 = rnn.step @id inputs(%x : tensor<2x4xf32>) states(%h : tensor<2x4xf32>) -> states(tensor<2x4xf16>)
  return
}

// -----

func.func @step_batch(%x: tensor<2x4xf32>, %h: tensor<3x4xf32>) {
  // expected-error @+1 {{'rnn.step' op batch size disagrees: input #0 has 2 but state #0 has 3}}
  %h1 = rnn.step @id inputs(%x : tensor<2x4xf32>) states(%h : tensor<3x4xf32>) -> states(tensor<3x4xf32>)
  return
}

// -----

func.func @step_rank(%x: tensor<1x2x4xf32>, %h: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.step' op input #0 has type 'tensor<1x2x4xf32>'; expected a [B, N] tensor}}
  %h1 = rnn.step @id inputs(%x : tensor<1x2x4xf32>) states(%h : tensor<2x4xf32>) -> states(tensor<2x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @step_output_type(%x: tensor<2x4xf32>, %h: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.step' op output #0 has type 'tensor<2x5xf32>' but cell @id expects 'tensor<?x4xf32>'}}
  %y, %h1 = rnn.step @id inputs(%x : tensor<2x4xf32>) states(%h : tensor<2x4xf32>)
      -> outputs(tensor<2x5xf32>) states(tensor<2x4xf32>)
  return
}

// -----

rnn.cell @id inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  rnn.yield outputs(%x : tensor<?x4xf32>) states(%h : tensor<?x4xf32>)
}

func.func @step_unknown(%x: tensor<2x4xf32>, %h: tensor<2x4xf32>) {
  // expected-error @+1 {{'rnn.step' op refers to an unknown cell @missing}}
  %y, %h1 = rnn.step @missing inputs(%x : tensor<2x4xf32>) states(%h : tensor<2x4xf32>)
      -> outputs(tensor<2x4xf32>) states(tensor<2x4xf32>)
  return
}
