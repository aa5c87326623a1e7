// RUN: rnn-opt %s -split-input-file --rnn-differentiate | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-differentiate=save=states | FileCheck %s --check-prefix=STATES

// An LSTM: the backward is what a hand-written BPTT does. The train cell
// also emits the cell state it started from and the pre-activation gates
// (the sum that both matmuls feed); h_{t-1} is not saved: the backward reads
// it off the output sequence (rnn.previous_states). The adjoint cell
// recomputes the activations from the gates, runs ONE matmul per step
// (dgates times U, for dh_prev) and emits dgates; after the reversed scan,
// dW, dU and dx are one GEMM each over all T*B rows, the bias gradient a
// column sum.
// CHECK-LABEL: rnn.cell @lstm_adjoint
// CHECK-SAME: inputs(%[[DY:.*]]: tensor<?x4xf32>, %[[CP:.*]]: tensor<?x4xf32>, %[[G:.*]]: tensor<?x16xf32>)
// CHECK-SAME: states(%[[DH:.*]]: tensor<?x4xf32>, %[[DC:.*]]: tensor<?x4xf32>) params(%[[U:.*]]: tensor<16x4xf32>) -> (tensor<?x16xf32>)
// CHECK: rnn.split %[[G]]
// CHECK-NOT: rnn.matmul
// CHECK: %[[DG:.*]] = rnn.concat
// CHECK-NEXT: %[[DHP:.*]] = rnn.matmul %[[DG]], %[[U]] weight_in_out : tensor<?x16xf32>, tensor<16x4xf32> -> tensor<?x4xf32>
// CHECK-NOT: rnn.matmul
// CHECK: rnn.yield outputs(%[[DG]] : tensor<?x16xf32>) states(%[[DHP]], %{{.*}} : tensor<?x4xf32>, tensor<?x4xf32>)

// CHECK-LABEL: rnn.cell @lstm_train
// CHECK: %[[GATES:.*]] = rnn.add %{{.*}}, %arg5 :
// CHECK: rnn.split %[[GATES]]
// CHECK: rnn.yield outputs(%{{.*}}, %arg2, %[[GATES]] : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x16xf32>)

// CHECK-LABEL: func.func @lstm_seq_train
// CHECK-SAME: -> (tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x16xf32>)
// CHECK-SAME: rnn.training_forward_of = @lstm_seq
// CHECK: rnn.scan @lstm_train inputs

// CHECK-LABEL: func.func @lstm_seq_backward
// CHECK-SAME: (%[[XS:[^:]*]]: tensor<?x?x3xf32>, %[[H0:[^:]*]]: tensor<?x4xf32>, %{{[^:]*}}: tensor<?x4xf32>, %[[W:[^:]*]]: tensor<16x3xf32>, %[[U0:[^:]*]]: tensor<16x4xf32>, %{{[^:]*}}: tensor<16xf32>,
// CHECK-SAME: %[[YS:[^:]*]]: tensor<?x?x4xf32>, %{{[^:]*}}: tensor<?x4xf32>, %{{[^:]*}}: tensor<?x4xf32>,
// CHECK-SAME: %[[CS:[^:]*]]: tensor<?x?x4xf32>, %[[GS:[^:]*]]: tensor<?x?x16xf32>, %[[DYS:[^:]*]]: tensor<?x?x4xf32>, %[[DHT:[^:]*]]: tensor<?x4xf32>, %[[DCT:[^:]*]]: tensor<?x4xf32>)
// CHECK-SAME: rnn.backward_of = @lstm_seq, rnn.num_saved = 2
// CHECK: %[[DGS:.*]], %[[DINIT:.*]]:2 = rnn.scan @lstm_adjoint reverse inputs(%[[DYS]], %[[CS]], %[[GS]] : {{.*}}) init(%[[DHT]], %[[DCT]] : {{.*}}) params(%[[U0]] : tensor<16x4xf32>)
// CHECK-NEXT: %[[DX:.*]] = rnn.matmul %[[DGS]], %[[W]] weight_in_out : tensor<?x?x16xf32>, tensor<16x3xf32> -> tensor<?x?x3xf32>
// CHECK-NEXT: %[[DW:.*]] = rnn.outer_sum %[[DGS]], %[[XS]] : tensor<?x?x16xf32>, tensor<?x?x3xf32> -> tensor<16x3xf32>
// CHECK-NEXT: %[[HS:.*]] = rnn.previous_states %[[YS]], %[[H0]] : tensor<?x?x4xf32>, tensor<?x4xf32>
// CHECK-NEXT: %[[DU:.*]] = rnn.outer_sum %[[DGS]], %[[HS]] : tensor<?x?x16xf32>, tensor<?x?x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %[[DB:.*]] = rnn.sum_to %[[DGS]] : tensor<?x?x16xf32> -> tensor<16xf32>
// CHECK-NEXT: return %[[DX]], %[[DINIT]]#0, %[[DINIT]]#1, %[[DW]], %[[DU]], %[[DB]]

// With save=states only the cell state is saved (h_{t-1} comes from the
// outputs): the adjoint cell recomputes both products (from inputs it
// receives as sequences, so that rnn-hoist-input-projection can run them
// over all steps).
// STATES-LABEL: rnn.cell @lstm_adjoint
// STATES-SAME: inputs(%{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<?x3xf32>, %{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<?x4xf32>)
// STATES-COUNT-3: rnn.matmul
// STATES-LABEL: func.func @lstm_seq_train
// STATES-SAME: -> (tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x?x4xf32>)
// STATES-LABEL: func.func @lstm_seq_backward
// STATES: rnn.previous_states
rnn.cell @lstm inputs(%x: tensor<?x3xf32>)
    states(%h: tensor<?x4xf32>, %c: tensor<?x4xf32>)
    params(%W: tensor<16x3xf32>, %U: tensor<16x4xf32>, %b: tensor<16xf32>)
    -> (tensor<?x4xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<16x3xf32> -> tensor<?x16xf32>
  %uh = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<16x4xf32> -> tensor<?x16xf32>
  %s = rnn.add %wx, %uh : tensor<?x16xf32>, tensor<?x16xf32>
  %gates = rnn.add %s, %b : tensor<?x16xf32>, tensor<16xf32>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x16xf32>
      -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  %si = rnn.sigmoid %i : tensor<?x4xf32>
  %sf = rnn.sigmoid %f : tensor<?x4xf32>
  %tg = rnn.tanh %g : tensor<?x4xf32>
  %so = rnn.sigmoid %o : tensor<?x4xf32>
  %fc = rnn.mul %sf, %c : tensor<?x4xf32>, tensor<?x4xf32>
  %ig = rnn.mul %si, %tg : tensor<?x4xf32>, tensor<?x4xf32>
  %c1 = rnn.add %fc, %ig : tensor<?x4xf32>, tensor<?x4xf32>
  %tc = rnn.tanh %c1 : tensor<?x4xf32>
  %h1 = rnn.mul %so, %tc : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%h1 : tensor<?x4xf32>) states(%h1, %c1 : tensor<?x4xf32>, tensor<?x4xf32>)
}
func.func @lstm_seq(%xs: tensor<?x?x3xf32>, %h0: tensor<?x4xf32>, %c0: tensor<?x4xf32>,
                    %W: tensor<16x3xf32>, %U: tensor<16x4xf32>, %b: tensor<16xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %ys, %hT, %cT = rnn.scan @lstm inputs(%xs : tensor<?x?x3xf32>)
      init(%h0, %c0 : tensor<?x4xf32>, tensor<?x4xf32>)
      params(%W, %U, %b : tensor<16x3xf32>, tensor<16x4xf32>, tensor<16xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>, tensor<?x4xf32>)
  return %ys, %hT, %cT : tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A reverse scan with lengths: the adjoint runs forward over the same
// lengths (a masked step passes the state gradient through); a peephole
// vector's gradient is the column sum of its per-step products; relu's
// subgradient is a heaviside step at 0; a parameter-only product (the
// scaled weight) leaves the cell first and its gradient flows back through
// it outside the loop.
// CHECK-LABEL: rnn.cell @peep_adjoint
// CHECK: rnn.heaviside %{{.*}} : tensor<?x4xf32>
// CHECK-LABEL: func.func @peep_seq_backward
// CHECK: rnn.previous_states %{{.*}}, %arg1 reverse lengths(%arg4 : tensor<?xi32>)
// CHECK: rnn.scan @peep_adjoint inputs({{.*}}) init({{.*}}) params({{.*}}) lengths(%arg4 : tensor<?xi32>)
// CHECK: %[[DP:.*]] = rnn.sum_to %{{.*}} : tensor<?x?x4xf32> -> tensor<4xf32>
// CHECK: %[[DWS:.*]] = rnn.outer_sum
// CHECK: %[[DW:.*]] = rnn.mul %[[DWS]], %{{.*}} : tensor<4x3xf32>, tensor<f32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DW]], %[[DP]] : tensor<?x?x3xf32>, tensor<?x4xf32>, tensor<4x3xf32>, tensor<4xf32>
rnn.cell @peep inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<4x3xf32>, %p: tensor<4xf32>) -> (tensor<?x4xf32>) {
  %two = rnn.constant 2.0 : tensor<f32>
  %W2 = rnn.mul %W, %two : tensor<4x3xf32>, tensor<f32>
  %wx = rnn.matmul %x, %W2 : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %ph = rnn.mul %h, %p : tensor<?x4xf32>, tensor<4xf32>
  %s = rnn.add %wx, %ph : tensor<?x4xf32>, tensor<?x4xf32>
  %r = rnn.relu %s : tensor<?x4xf32>
  rnn.yield outputs(%r : tensor<?x4xf32>) states(%r : tensor<?x4xf32>)
}
func.func @peep_seq(%xs: tensor<?x?x3xf32>, %h0: tensor<?x4xf32>, %W: tensor<4x3xf32>,
                    %p: tensor<4xf32>, %len: tensor<?xi32>) -> tensor<?x?x4xf32> {
  %ys, %hT = rnn.scan @peep reverse inputs(%xs : tensor<?x?x3xf32>)
      init(%h0 : tensor<?x4xf32>) params(%W, %p : tensor<4x3xf32>, tensor<4xf32>)
      lengths(%len : tensor<?xi32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %ys : tensor<?x?x4xf32>
}

// -----

// A select sends the gradient to the operand it chose: two selects of the
// gradient and zero, on the same comparison of the saved values. A
// function's transposes and reshapes are undone in its backward (the
// inverse permutation, the reshape back).
// CHECK-LABEL: rnn.cell @sel_adjoint
// CHECK: %[[ZERO:.*]] = rnn.constant 0.000000e+00 : tensor<f32>
// CHECK: rnn.select gt %[[T:.*]], %[[H:.*]], %[[G:.*]], %[[ZERO]] : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<f32>
// CHECK: rnn.select gt %[[T]], %[[H]], %[[ZERO]], %[[G]] : tensor<?x4xf32>, tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32>
// CHECK-LABEL: func.func @sel_seq_backward
// CHECK: rnn.reshape %arg6 : tensor<?x1x?x4xf32> -> tensor<?x?x4xf32>
// CHECK: %[[DX:.*]], %[[DH:.*]] = rnn.scan @sel_adjoint reverse
// CHECK: %[[DH0:.*]] = rnn.reshape %[[DH]] : tensor<?x4xf32> -> tensor<1x?x4xf32>
// CHECK: %[[DXS:.*]] = rnn.transpose %[[DX]] permutation [1, 0, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
// CHECK: return %[[DXS]], %[[DH0]]
rnn.cell @sel inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) params(%U: tensor<4x4xf32>) -> (tensor<?x4xf32>) {
  %g = rnn.matmul %h, %U : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %x, %g : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  %hn = rnn.select gt %t, %h, %t, %h : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%hn : tensor<?x4xf32>) states(%hn : tensor<?x4xf32>)
}
func.func @sel_seq(%x: tensor<?x?x4xf32>, %h0: tensor<1x?x4xf32>, %U: tensor<4x4xf32>) -> tensor<?x1x?x4xf32> {
  %xs = rnn.transpose %x permutation [1, 0, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %h = rnn.reshape %h0 : tensor<1x?x4xf32> -> tensor<?x4xf32>
  %ys, %hT = rnn.scan @sel inputs(%xs : tensor<?x?x4xf32>) init(%h : tensor<?x4xf32>) params(%U : tensor<4x4xf32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %y = rnn.reshape %ys : tensor<?x?x4xf32> -> tensor<?x1x?x4xf32>
  return %y : tensor<?x1x?x4xf32>
}

// -----

// A bf16 model's projection: the gate gradients reach the input and weight
// gradients' GEMMs only in bf16, so the bias gradient sums those bf16
// values (in f32).
// CHECK-LABEL: func.func @projected_backward
// CHECK: %[[G16:.*]] = rnn.cast %{{.*}} : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
// CHECK: rnn.sum_to %[[G16]] : tensor<?x?x4xbf16> -> tensor<4xf32>
// CHECK-NOT: rnn.sum_to %{{.*}} : tensor<?x?x4xf32>
rnn.cell @projected_step inputs(%p: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = rnn.tanh %p : tensor<?x4xf32>
  %s = rnn.add %y, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%s : tensor<?x4xf32>) states(%s : tensor<?x4xf32>)
}
func.func @projected(%x: tensor<?x?x3xbf16>, %W: tensor<4x3xbf16>, %b: tensor<4xf32>, %h0: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %p = rnn.matmul %x, %W : tensor<?x?x3xbf16>, tensor<4x3xbf16> -> tensor<?x?x4xf32>
  %pb = rnn.add %p, %b : tensor<?x?x4xf32>, tensor<4xf32>
  %ys, %hT = rnn.scan @projected_step inputs(%pb : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %hT : tensor<?x4xf32>
}

// -----

// No product reads the rounded gradient (only the bf16 input's own
// gradient is rounded): the f32 bias keeps the f32 sum.
// CHECK-LABEL: func.func @unprojected_backward
// CHECK: rnn.sum_to %{{.*}} : tensor<?x?x4xf32> -> tensor<4xf32>
rnn.cell @unprojected_step inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @unprojected(%x: tensor<?x?x4xbf16>, %b: tensor<4xf32>, %h0: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %xe = rnn.cast %x : tensor<?x?x4xbf16> to tensor<?x?x4xf32>
  %xb = rnn.add %xe, %b : tensor<?x?x4xf32>, tensor<4xf32>
  %ys, %hT = rnn.scan @unprojected_step inputs(%xb : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  return %hT : tensor<?x4xf32>
}

// -----

// A sum of a bf16 tensor in f32 (the bias gradient's op, in a function
// that is differentiated again): its input's gradient is the result's,
// rounded back to bf16 and spread over the summed rows.
// CHECK-LABEL: func.func @widened_sum_backward
// CHECK: %[[G:.*]] = rnn.cast %{{.*}} : tensor<4xf32> to tensor<4xbf16>
// CHECK: rnn.add %{{.*}}, %[[G]] : tensor<?x4xbf16>, tensor<4xbf16>
func.func @widened_sum(%x: tensor<?x4xbf16>) -> tensor<4xf32> {
  %s = rnn.sum_to %x : tensor<?x4xbf16> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
