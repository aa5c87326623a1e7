// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront="persistent-min-steps=32 persistent-max-batch=16 persistent-min-hidden=8 persistent-max-hidden=8" | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront="persistent-min-steps=32 persistent-max-batch=16 persistent-min-hidden=8" --rnn-layer-wavefront="persistent-min-steps=32 persistent-max-batch=16 persistent-min-hidden=8" | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront | FileCheck %s --check-prefix=NONE
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront="persistent-min-steps=32 persistent-max-batch=16 persistent-min-hidden=16" | FileCheck %s --check-prefix=NONE
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront="persistent-min-steps=32 persistent-max-batch=16 persistent-max-hidden=4" | FileCheck %s --check-prefix=NONE
// RUN: rnn-opt %s -split-input-file --rnn-layer-wavefront="chunk-steps=4 persistent-min-steps=32 persistent-max-batch=16" | FileCheck %s --check-prefix=FIXED
// RUN: not rnn-opt %s -split-input-file --rnn-layer-wavefront="persistent-min-steps=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: rnn-layer-wavefront: persistent-min-steps, persistent-max-batch, persistent-min-hidden and persistent-max-hidden must not be negative, not -1, 0, 0 and 0

// With persistent-min-steps (rnn-compile sets the four options for CUDA
// from the device library), a chain whose cells' products all read bf16 or
// f16 rows of K in [persistent-min-hidden, persistent-max-hidden] takes
// chunks of at least that many steps where the batch is at most
// persistent-max-batch rows and T at least twice the minimum, so that each
// lane's chunk can run as a grid-wide persistent kernel; otherwise (a K
// outside the range: NONE) ceil(sqrt(3 T)) as always. The loop says which.
// CHECK-LABEL: func.func @bf16_layers
// CHECK: %[[T:.*]] = tensor.dim %arg0, %c0{{.*}} : tensor<?x?x8xbf16>
// CHECK: %[[B:.*]] = tensor.dim %arg0, %c1{{.*}} : tensor<?x?x8xbf16>
// CHECK: math.ceil
// CHECK: %[[AUTO:.*]] = arith.maxui
// CHECK-DAG: %[[MIN:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 16 : index
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %[[B]], %[[ROWS]] :
// CHECK: %[[TWICE:.*]] = arith.constant 64 : index
// CHECK: %[[LONG:.*]] = arith.cmpi uge, %[[T]], %[[TWICE]] :
// CHECK: %[[BOTH:.*]] = arith.andi %[[FITS]], %[[LONG]]
// CHECK: %[[RAISED:.*]] = arith.maxui %[[AUTO]], %[[MIN]] :
// CHECK: %[[C:.*]] = arith.select %[[BOTH]], %[[RAISED]], %[[AUTO]]
// CHECK: arith.ceildivui %[[T]], %[[C]]
// CHECK: scf.for
// CHECK: } {rnn.wavefront_chunk = "ceil(sqrt(3 T)) time steps, at least 32 where B <= 16 and T >= 64 (16-bit products of the grid-wide persistent kernel's sizes: each lane's full chunks then long enough for it)"}
// NONE-LABEL: func.func @bf16_layers
// NONE-NOT: arith.select
// NONE: arith.ceildivui
// NONE: } {rnn.wavefront_chunk = "ceil(sqrt(3 T)) time steps"}
// FIXED-LABEL: func.func @bf16_layers
// FIXED: %[[C:.*]] = arith.constant 4 : index
// FIXED-NOT: arith.select
// FIXED: arith.ceildivui %{{.*}}, %[[C]]
// FIXED: } {rnn.wavefront_chunk = "4 time steps"}
rnn.cell @bf16_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xbf16>) -> (tensor<?x8xf32>) {
  %h16 = rnn.cast %h : tensor<?x8xf32> to tensor<?x8xbf16>
  %uh = rnn.matmul %h16, %U : tensor<?x8xbf16>, tensor<8x8xbf16> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @bf16_layers(%xs: tensor<?x?x8xbf16>, %h0: tensor<?x8xf32>,
                       %h1: tensor<?x8xf32>, %U: tensor<8x8xbf16>,
                       %W0: tensor<8x8xbf16>, %W1: tensor<8x8xbf16>)
    -> (tensor<?x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %p0 = rnn.matmul %xs, %W0 : tensor<?x?x8xbf16>, tensor<8x8xbf16> -> tensor<?x?x8xf32>
  %ys0, %hT0 = rnn.scan @bf16_cell inputs(%p0 : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xbf16>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %y16 = rnn.cast %ys0 : tensor<?x?x8xf32> to tensor<?x?x8xbf16>
  %p1 = rnn.matmul %y16, %W1 : tensor<?x?x8xbf16>, tensor<8x8xbf16> -> tensor<?x?x8xf32>
  %ys1, %hT1 = rnn.scan @bf16_cell inputs(%p1 : tensor<?x?x8xf32>)
      init(%h1 : tensor<?x8xf32>) params(%U : tensor<8x8xbf16>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys1, %hT0, %hT1 : tensor<?x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// An f32 chain keeps ceil(sqrt(3 T)) whatever the options: its lanes run
// step loops or block kernels, for which longer chunks only fill the
// wavefront later.
// CHECK-LABEL: func.func @f32_layers
// CHECK-NOT: arith.select
// CHECK: arith.ceildivui
// CHECK: scf.for
rnn.cell @f32_cell inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x8xf32>)
    params(%U: tensor<8x8xf32>) -> (tensor<?x8xf32>) {
  %uh = rnn.matmul %h, %U : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %s = rnn.add %x, %uh : tensor<?x8xf32>, tensor<?x8xf32>
  %hn = rnn.tanh %s : tensor<?x8xf32>
  rnn.yield outputs(%hn : tensor<?x8xf32>) states(%hn : tensor<?x8xf32>)
}
func.func @f32_layers(%xs: tensor<?x?x8xf32>, %h0: tensor<?x8xf32>,
                      %h1: tensor<?x8xf32>, %U: tensor<8x8xf32>,
                      %W: tensor<8x8xf32>, %b: tensor<8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %ys0, %hT0 = rnn.scan @f32_cell inputs(%xs : tensor<?x?x8xf32>)
      init(%h0 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  %p = rnn.matmul %ys0, %W : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %pb = rnn.add %p, %b : tensor<?x?x8xf32>, tensor<8xf32>
  %ys1, %hT1 = rnn.scan @f32_cell inputs(%pb : tensor<?x?x8xf32>)
      init(%h1 : tensor<?x8xf32>) params(%U : tensor<8x8xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys1, %hT0, %hT1 : tensor<?x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
