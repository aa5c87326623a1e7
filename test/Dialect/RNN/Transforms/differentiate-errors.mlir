// RUN: rnn-opt %s -split-input-file -verify-diagnostics --rnn-differentiate
// RUN: not rnn-opt %s -split-input-file --rnn-differentiate=save=activations 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not rnn-opt %s -split-input-file --rnn-differentiate=functions=nowhere 2>&1 | FileCheck %s --check-prefix=NAMED

// POLICY: rnn-differentiate: save=activations is not a policy (expected gates or states)
// NAMED: rnn-differentiate: no function @nowhere

// A fused group has no adjoint rule of its own: the cell is differentiated
// before rnn-fuse-pointwise, and the adjoint is fused by the same pass.
rnn.cell @fused inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  // expected-error @below {{'rnn.pointwise' op has no adjoint rule: differentiate a cell before rnn-fuse-pointwise}}
  %s = rnn.pointwise(%x, %h) : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    rnn.pointwise_yield %t : f32
  }
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @fused inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

func.func @group(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @below {{'rnn.pointwise' op has no adjoint rule: differentiate @group before rnn-fuse-pointwise}}
  %s = rnn.pointwise(%a) : tensor<?x4xf32> -> tensor<?x4xf32> {
  ^bb0(%x: f32):
    %t = math.tanh %x : f32
    rnn.pointwise_yield %t : f32
  }
  return %s : tensor<?x4xf32>
}

// -----

func.func private @external(tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @calls(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @below {{'func.call' op has no adjoint rule}}
  %b = func.call @external(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %b : tensor<?x4xf32>
}

// -----

// expected-error @below {{'func.func' op cannot be differentiated: the module already has a symbol @taken_train}}
func.func @taken(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %b = rnn.tanh %a : tensor<?x4xf32>
  return %b : tensor<?x4xf32>
}
func.func private @taken_train()

// -----

func.func @region(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @below {{'scf.execute_region' op has regions; @region cannot be differentiated}}
  %b = scf.execute_region -> tensor<?x4xf32> {
    %t = rnn.tanh %a : tensor<?x4xf32>
    scf.yield %t : tensor<?x4xf32>
  }
  return %b : tensor<?x4xf32>
}

// -----

// Gradients are tensors: a public function of other types (found by the
// fuzzer: this crashed the pass) is refused with its first such type.
// expected-error @below {{'func.func' op cannot be differentiated: argument #0 is 'index', not a ranked tensor}}
func.func @rows(%a: index, %b: index) -> index {
  %c = arith.addi %a, %b : index
  return %c : index
}

// -----

// expected-error @below {{'func.func' op cannot be differentiated: result #1 is 'index', not a ranked tensor}}
func.func @with_size(%a: tensor<?x4xf32>) -> (tensor<?x4xf32>, index) {
  %c0 = arith.constant 0 : index
  %t = rnn.tanh %a : tensor<?x4xf32>
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  return %t, %n : tensor<?x4xf32>, index
}
