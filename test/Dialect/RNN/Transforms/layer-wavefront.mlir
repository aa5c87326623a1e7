// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront --rnn-layer-wavefront | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront=chunk-steps=4 | FileCheck %s --check-prefix=FIXED
// RUN: not rnn-opt %s -split-input-file --rnn-layer-wavefront=chunk-steps=-1 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: rnn-layer-wavefront: chunk-steps must be 0 (automatic) or positive, not -1

// Two layers linked by layer 1's hoisted input projection (a matmul and a
// bias over layer 0's output sequence) become one loop over chunks of
// ceil(sqrt(3 T)) steps. Each layer's chunk is a lane: layer 0 reads its rows
// of the input, layer 1 projects its rows of layer 0's output (the link,
// on the chunk alone), and each writes its chunk's rows in place. The
// second run finds no chain (each scan is alone in its lane): the pass is
// idempotent.
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[T:.*]] = tensor.dim %arg0, %c0{{.*}} : tensor<?x?x8xf32>
// CHECK: %[[TF:.*]] = arith.uitofp
// CHECK: %[[C3:.*]] = arith.constant 3.0
// CHECK: %[[T3:.*]] = arith.mulf %[[TF]], %[[C3]]
// CHECK: %[[ROOT:.*]] = math.sqrt %[[T3]]
// CHECK: math.ceil %[[ROOT]]
// CHECK: %[[C:.*]] = arith.maxui
// CHECK: %[[N:.*]] = arith.ceildivui %[[T]], %[[C]]
// CHECK: %[[Y0:.*]] = tensor.empty(%[[T]], %{{.*}}) : tensor<?x?x8xf32>
// CHECK: %[[Y1:.*]] = tensor.empty(%[[T]], %{{.*}}) : tensor<?x?x8xf32>
// CHECK: %[[LOOP:.*]]:4 = scf.for %[[K:.*]] = %c0 to %[[N]] step %c1 iter_args(%[[S0:.*]] = %[[Y0]], %[[H0:.*]] = %arg1, %[[S1:.*]] = %[[Y1]], %[[H1:.*]] = %arg2)
// CHECK: %[[START:.*]] = arith.muli %[[K]], %[[C]]
// CHECK: %[[LEN:.*]] = arith.minui %[[C]],
// CHECK: %[[L0:.*]]:2 = scf.execute_region -> (tensor<?x?x8xf32>, tensor<?x8xf32>) no_inline {
// CHECK:   func.call @rnn_cuda_lane_begin(%c0_i64, %c-1_i64) : (i64, i64) -> ()
// CHECK:   %[[X:.*]] = tensor.extract_slice %arg0[%[[START]], 0, 0] [%[[LEN]], %{{.*}}, 8] [1, 1, 1]
// CHECK:   %[[R0:.*]], %[[F0:.*]] = rnn.scan @tanh_cell inputs(%[[X]] : tensor<?x?x8xf32>) init(%[[H0]] : tensor<?x8xf32>)
// CHECK:   %[[W0:.*]] = tensor.insert_slice %[[R0]] into %[[S0]][%[[START]], 0, 0]
// CHECK:   scf.yield %[[W0]], %[[F0]]
// CHECK: }
// CHECK: %[[L1:.*]]:2 = scf.execute_region -> (tensor<?x?x8xf32>, tensor<?x8xf32>) no_inline {
// CHECK:   func.call @rnn_cuda_lane_begin(%c1_i64, %c0_i64) : (i64, i64) -> ()
// CHECK:   %[[Y:.*]] = tensor.extract_slice %[[L0]]#0[%[[START]], 0, 0] [%[[LEN]], %{{.*}}, 8] [1, 1, 1]
// CHECK:   %[[P:.*]] = rnn.matmul %[[Y]], %arg4 : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
// CHECK:   %[[PB:.*]] = rnn.add %[[P]], %arg5 : tensor<?x?x8xf32>, tensor<8xf32>
// CHECK:   %[[R1:.*]], %{{.*}} = rnn.scan @tanh_cell inputs(%[[PB]] : tensor<?x?x8xf32>) init(%[[H1]] : tensor<?x8xf32>)
// CHECK:   tensor.insert_slice %[[R1]] into %[[S1]]
// CHECK: }
// CHECK: scf.yield %[[L0]]#0, %[[L0]]#1, %[[L1]]#0, %[[L1]]#1
// CHECK-NOT: rnn.scan
// CHECK-NOT: rnn.matmul
// CHECK: return %[[LOOP]]#2, %[[LOOP]]#1, %[[LOOP]]#3
// CHECK: func.func private @rnn_cuda_lane_begin(i64, i64)
// FIXED-LABEL: func.func @two_layers
// FIXED: %[[C:.*]] = arith.constant 4 : index
// FIXED: arith.ceildivui %{{.*}}, %[[C]]
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @two_layers(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                      %h1: tensor<?x8xf32>, %U: tensor<8x8xf32>,
                      %W: tensor<8x8xf32>, %b: tensor<8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %ys0, %hT0 = rnn.scan @tanh_cell inputs(%xs : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %p = rnn.matmul %ys0, %W : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %pb = rnn.add %p, %b : tensor<?x?x8xf32>, tensor<8xf32>
  %ys1, %hT1 = rnn.scan @tanh_cell inputs(%pb : tensor<?x?x8xf32>)
      init(%h1 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys1, %hT0, %hT1 : tensor<?x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Three layers with a static sequence length: one loop, three lanes, each
// waiting for the one below.
// CHECK-LABEL: func.func @three_layers
// CHECK: scf.for
// CHECK: call @rnn_cuda_lane_begin(%c0_i64, %c-1_i64)
// CHECK: call @rnn_cuda_lane_begin(%c1_i64, %c0_i64)
// CHECK: call @rnn_cuda_lane_begin(%c2_i64, %c1_i64)
// CHECK-NOT: call @rnn_cuda_lane_begin
// CHECK: return {{.*}} : tensor<10x?x8xf32>
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @three_layers(%xs: tensor<10x?x8xf32>, %h0: tensor<?x8xf32>,
                        %U: tensor<8x8xf32>) -> tensor<10x?x8xf32> {
  %a, %ha = rnn.scan @tanh_cell inputs(%xs : tensor<10x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<10x?x8xf32>) states(tensor<?x8xf32>)
  %b, %hb = rnn.scan @tanh_cell inputs(%a : tensor<10x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<10x?x8xf32>) states(tensor<?x8xf32>)
  %c, %hc = rnn.scan @tanh_cell inputs(%b : tensor<10x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<10x?x8xf32>) states(tensor<?x8xf32>)
  return %c : tensor<10x?x8xf32>
}

// -----

// Left alone: a reverse scan and a forward one, scans with sequence
// lengths, a link that reads the previous layer's final state (known only
// after its last chunk); each scan reads the one before, so none can run
// beside another either.
// CHECK-LABEL: func.func @not_chains
// CHECK-NOT: scf.for
// CHECK-NOT: scf.execute_region
// CHECK-NOT: rnn_cuda_lane_begin
// CHECK-COUNT-6: rnn.scan
// CHECK-NOT: rnn.scan
// CHECK-NOT: rnn_cuda_lane_begin
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @not_chains(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                      %U: tensor<8x8xf32>, %len: tensor<?xi64>)
    -> tensor<?x?x8xf32> {
  %r0, %rh0 = rnn.scan @tanh_cell reverse inputs(%xs : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %r1, %rh1 = rnn.scan @tanh_cell inputs(%r0 : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %l0, %lh0 = rnn.scan @tanh_cell inputs(%r1 : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      lengths(%len : tensor<?xi64>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %l1, %lh1 = rnn.scan @tanh_cell inputs(%l0 : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      lengths(%len : tensor<?xi64>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %s0, %sh0 = rnn.scan @tanh_cell inputs(%l1 : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %res = rnn.add %s0, %sh0 : tensor<?x?x8xf32>, tensor<?x8xf32>
  %s1, %sh1 = rnn.scan @tanh_cell inputs(%res : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %s1 : tensor<?x?x8xf32>
}

// -----

// Layer 0's input projection (computed before its scan from the input
// sequence) runs in the loop on each chunk's rows too, and a later layer's
// initial state computed between the scans (here a tanh of it; a cast to
// bf16 in a bf16 stack) moves before the loop.
// CHECK-LABEL: func.func @links_and_inits
// CHECK: %[[INIT:.*]] = rnn.tanh %arg2
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %arg1, {{.*}}, %{{.*}} = %[[INIT]])
// CHECK: func.call @rnn_cuda_lane_begin(%c0_i64, %c-1_i64)
// CHECK-NEXT: %[[X:.*]] = tensor.extract_slice %arg0
// CHECK-NEXT: %[[P:.*]] = rnn.matmul %[[X]], %arg4 : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT: rnn.scan @tanh_cell inputs(%[[P]] : tensor<?x?x8xf32>)
// CHECK: func.call @rnn_cuda_lane_begin(%c1_i64, %c0_i64)
// CHECK-NOT: rnn.matmul
// CHECK: return
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @links_and_inits(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                           %h1: tensor<?x8xf32>, %U: tensor<8x8xf32>,
                           %W: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x8xf32>) {
  %p = rnn.matmul %xs, %W : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %ys0, %hT0 = rnn.scan @tanh_cell inputs(%p : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %init = rnn.tanh %h1 : tensor<?x8xf32>
  %ys1, %hT1 = rnn.scan @tanh_cell inputs(%ys0 : tensor<?x?x8xf32>)
      init(%init : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys1, %hT1 : tensor<?x?x8xf32>, tensor<?x8xf32>
}

// -----

// Two bidirectional layers: each layer's forward and reverse scans, which
// read nothing of each other, run side by side, each in a lane of its own
// with its input projection and waiting for no other; layer 1 reads the
// concatenation after layer 0's group.
// CHECK-LABEL: func.func @bidirectional
// CHECK: %[[G0:.*]]:4 = scf.execute_region
// CHECK-NEXT: scf.execute_region
// CHECK: func.call @rnn_cuda_lane_begin(%c0_i64{{.*}}, %c-1_i64{{.*}})
// CHECK-NEXT: rnn.matmul %arg0, %arg2
// CHECK-NEXT: rnn.scan @tanh_cell inputs
// CHECK: func.call @rnn_cuda_lane_begin(%c1_i64{{.*}}, %c-1_i64{{.*}})
// CHECK-NEXT: rnn.matmul %arg0, %arg3
// CHECK-NEXT: rnn.scan @tanh_cell reverse inputs
// CHECK: %[[Y0:.*]] = rnn.concat %[[G0]]#0, %[[G0]]#2
// CHECK: scf.execute_region
// CHECK: func.call @rnn_cuda_lane_begin(%c0_i64{{.*}}, %c-1_i64{{.*}})
// CHECK-NEXT: rnn.matmul %[[Y0]], %arg4
// CHECK: func.call @rnn_cuda_lane_begin(%c1_i64{{.*}}, %c-1_i64{{.*}})
// CHECK-NEXT: rnn.matmul %[[Y0]], %arg5
// CHECK-NEXT: rnn.scan @tanh_cell reverse inputs
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @bidirectional(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                         %W0f: tensor<8x8xf32>, %W0r: tensor<8x8xf32>,
                         %W1f: tensor<8x16xf32>, %W1r: tensor<8x16xf32>,
                         %U: tensor<8x8xf32>) -> tensor<?x?x16xf32> {
  %p0f = rnn.matmul %xs, %W0f : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %f0, %hf0 = rnn.scan @tanh_cell inputs(%p0f : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %p0r = rnn.matmul %xs, %W0r : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %r0, %hr0 = rnn.scan @tanh_cell reverse inputs(%p0r : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y0 = rnn.concat %f0, %r0 : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x16xf32>
  %p1f = rnn.matmul %y0, %W1f : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  %f1, %hf1 = rnn.scan @tanh_cell inputs(%p1f : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %p1r = rnn.matmul %y0, %W1r : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  %r1, %hr1 = rnn.scan @tanh_cell reverse inputs(%p1r : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y1 = rnn.concat %f1, %r1 : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x16xf32>
  return %y1 : tensor<?x?x16xf32>
}

// -----

// A chain of reverse scans (a stack's backward) runs over chunks from the
// last rows: chunk k covers rows [max(T - (k + 1) C, 0), T - k C).
// CHECK-LABEL: func.func @reverse_chain
// CHECK: scf.for %[[K:.*]] = %c0 to
// CHECK: %[[DONE:.*]] = arith.muli %[[K]], %[[C:.*]] : index
// CHECK: %[[LEFT:.*]] = arith.subi %{{.*}}, %[[DONE]]
// CHECK: %[[COUNT:.*]] = arith.minui %[[C]], %[[LEFT]]
// CHECK: %[[START:.*]] = arith.subi %[[LEFT]], %[[COUNT]]
// CHECK: call @rnn_cuda_lane_begin(%c0_i64, %c-1_i64)
// CHECK: tensor.extract_slice %arg0[%[[START]], 0, 0] [%[[COUNT]],
// CHECK: rnn.scan @tanh_cell reverse inputs
// CHECK: call @rnn_cuda_lane_begin(%c1_i64, %c0_i64)
// CHECK: rnn.scan @tanh_cell reverse inputs
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @reverse_chain(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                         %U: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %r0, %rh0 = rnn.scan @tanh_cell reverse inputs(%xs : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %r1, %rh1 = rnn.scan @tanh_cell reverse inputs(%r0 : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %r1 : tensor<?x?x8xf32>
}

// -----

// A link may read other sequences computed before the chain (a residual
// connection; a backward's saved gates): the loop slices them too.
// CHECK-LABEL: func.func @residual
// CHECK: scf.for
// CHECK: call @rnn_cuda_lane_begin(%c1_i64, %c0_i64)
// CHECK-DAG: %[[X:.*]] = tensor.extract_slice %arg0[
// CHECK-DAG: %[[Y:.*]] = tensor.extract_slice %{{.*}}#0[
// CHECK: %[[SUM:.*]] = rnn.add %[[Y]], %[[X]]
// CHECK: rnn.scan @tanh_cell inputs(%[[SUM]] : tensor<?x?x8xf32>)
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @residual(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                    %U: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %s0, %sh0 = rnn.scan @tanh_cell inputs(%xs : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %res = rnn.add %s0, %xs : tensor<?x?x8xf32>, tensor<?x?x8xf32>
  %s1, %sh1 = rnn.scan @tanh_cell inputs(%res : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %s1 : tensor<?x?x8xf32>
}

// -----

// A static batch stays static in the chunks' slices.
// CHECK-LABEL: func.func @static_batch
// CHECK: scf.for
// CHECK: tensor.extract_slice %arg0[%{{.*}}, 0, 0] [%{{.*}}, 4, 8] [1, 1, 1] : tensor<10x4x8xf32> to tensor<?x4x8xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0, 0] [%{{.*}}, 4, 8] [1, 1, 1] : tensor<?x4x8xf32> into tensor<10x4x8xf32>
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @static_batch(%xs: tensor<10x4x8xf32>, %h0: tensor<4x8xf32>,
                        %U: tensor<8x8xf32>) -> tensor<10x4x8xf32> {
  %a, %ha = rnn.scan @tanh_cell inputs(%xs : tensor<10x4x8xf32>)
      init(%h0 : tensor<4x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<10x4x8xf32>) states(tensor<4x8xf32>)
  %b, %hb = rnn.scan @tanh_cell inputs(%a : tensor<10x4x8xf32>)
      init(%h0 : tensor<4x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<10x4x8xf32>) states(tensor<4x8xf32>)
  return %b : tensor<10x4x8xf32>
}

// -----

// 17 layers: a lane each, and the runtime has 16, so the first 16 are one
// chain and the 17th is left alone.
// CHECK-LABEL: func.func @seventeen
// CHECK: scf.for
// CHECK: call @rnn_cuda_lane_begin(%c15_i64, %c14_i64)
// CHECK-NOT: call @rnn_cuda_lane_begin(%c16_i64
// CHECK: }
// CHECK: rnn.scan @tanh_cell
// CHECK-NEXT: return
rnn.cell @tanh_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @seventeen(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>, %U: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %y0, %hT0 = rnn.scan @tanh_cell inputs(%xs : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y1, %hT1 = rnn.scan @tanh_cell inputs(%y0 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y2, %hT2 = rnn.scan @tanh_cell inputs(%y1 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y3, %hT3 = rnn.scan @tanh_cell inputs(%y2 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y4, %hT4 = rnn.scan @tanh_cell inputs(%y3 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y5, %hT5 = rnn.scan @tanh_cell inputs(%y4 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y6, %hT6 = rnn.scan @tanh_cell inputs(%y5 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y7, %hT7 = rnn.scan @tanh_cell inputs(%y6 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y8, %hT8 = rnn.scan @tanh_cell inputs(%y7 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y9, %hT9 = rnn.scan @tanh_cell inputs(%y8 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y10, %hT10 = rnn.scan @tanh_cell inputs(%y9 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y11, %hT11 = rnn.scan @tanh_cell inputs(%y10 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y12, %hT12 = rnn.scan @tanh_cell inputs(%y11 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y13, %hT13 = rnn.scan @tanh_cell inputs(%y12 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y14, %hT14 = rnn.scan @tanh_cell inputs(%y13 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y15, %hT15 = rnn.scan @tanh_cell inputs(%y14 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y16, %hT16 = rnn.scan @tanh_cell inputs(%y15 : tensor<?x?x8xf32>) init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %y16 : tensor<?x?x8xf32>
}
