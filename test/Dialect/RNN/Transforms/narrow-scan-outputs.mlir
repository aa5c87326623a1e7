// RUN: rnn-opt %s -split-input-file --rnn-narrow-scan-outputs | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-narrow-scan-outputs --rnn-narrow-scan-outputs | FileCheck %s

// An output that every reader casts to bf16 (a bf16 backward's gate
// gradients, read by GEMMs after the loop) is yielded cast: the cell's
// output and the scan's sequence are bf16, the cast after the loop goes.
// The cell's own cast of the value (for its matmul) serves both.
// CHECK-LABEL: rnn.cell @gradients
// CHECK-SAME: -> (tensor<?x8xbf16>)
// CHECK: %[[D:.*]] = rnn.mul
// CHECK: %[[D16:.*]] = rnn.cast %[[D]] : tensor<?x8xf32> to tensor<?x8xbf16>
// CHECK-NOT: rnn.cast
// CHECK: rnn.matmul %[[D16]]
// CHECK: rnn.yield outputs(%[[D16]] : tensor<?x8xbf16>)
// CHECK-LABEL: func.func @backward
// CHECK: %[[SEQ:[^,]*]], %{{.*}} = rnn.scan @gradients
// CHECK-SAME: -> outputs(tensor<?x?x8xbf16>)
// CHECK-NOT: rnn.cast
// CHECK: rnn.outer_sum %[[SEQ]], %{{.*}} : tensor<?x?x8xbf16>
// CHECK: rnn.matmul %[[SEQ]], %{{.*}} weight_in_out : tensor<?x?x8xbf16>
rnn.cell @gradients inputs(%dy: tensor<?x4xf32>, %g: tensor<?x8xf32>) states(%dh: tensor<?x4xf32>)
    params(%U: tensor<8x4xbf16>) -> (tensor<?x8xf32>) {
  %s = rnn.concat %dy, %dh : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  %d = rnn.mul %s, %g : tensor<?x8xf32>, tensor<?x8xf32>
  %d16 = rnn.cast %d : tensor<?x8xf32> to tensor<?x8xbf16>
  %dhn = rnn.matmul %d16, %U weight_in_out : tensor<?x8xbf16>, tensor<8x4xbf16> -> tensor<?x4xf32>
  rnn.yield outputs(%d : tensor<?x8xf32>) states(%dhn : tensor<?x4xf32>)
}
func.func @backward(%dys: tensor<?x?x4xf32>, %gs: tensor<?x?x8xf32>, %dh: tensor<?x4xf32>,
                    %U: tensor<8x4xbf16>, %xs: tensor<?x?x4xbf16>, %W: tensor<8x4xbf16>)
    -> (tensor<8x4xf32>, tensor<?x?x4xf32>) {
  %ds, %dh0 = rnn.scan @gradients reverse inputs(%dys, %gs : tensor<?x?x4xf32>, tensor<?x?x8xf32>)
      init(%dh : tensor<?x4xf32>) params(%U : tensor<8x4xbf16>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x4xf32>)
  %a = rnn.cast %ds : tensor<?x?x8xf32> to tensor<?x?x8xbf16>
  %dW = rnn.outer_sum %a, %xs : tensor<?x?x8xbf16>, tensor<?x?x4xbf16> -> tensor<8x4xf32>
  %b = rnn.cast %ds : tensor<?x?x8xf32> to tensor<?x?x8xbf16>
  %dx = rnn.matmul %b, %W weight_in_out : tensor<?x?x8xbf16>, tensor<8x4xbf16> -> tensor<?x?x4xf32>
  return %dW, %dx : tensor<8x4xf32>, tensor<?x?x4xf32>
}

// -----

// A reader that takes the f32 value keeps the output f32.
// CHECK-LABEL: rnn.cell @read_wide
// CHECK-SAME: -> (tensor<?x4xf32>)
// CHECK-LABEL: func.func @run
// CHECK: rnn.cast
// CHECK: rnn.sum_to %{{.*}} : tensor<?x?x4xf32> -> tensor<4xf32>
rnn.cell @read_wide inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>) -> (tensor<?x?x4xbf16>, tensor<4xf32>) {
  %ys, %hT = rnn.scan @read_wide inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %c = rnn.cast %ys : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  %s = rnn.sum_to %ys : tensor<?x?x4xf32> -> tensor<4xf32>
  return %c, %s : tensor<?x?x4xbf16>, tensor<4xf32>
}

// -----

// Casts to two types, or to a wider type: left alone.
// CHECK-LABEL: rnn.cell @two_types
// CHECK-SAME: -> (tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-LABEL: func.func @run
// CHECK-COUNT-3: rnn.cast
rnn.cell @two_types inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y, %x : tensor<?x4xf32>, tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>)
    -> (tensor<?x?x4xbf16>, tensor<?x?x4xf16>, tensor<?x?x4xf64>) {
  %ys:2, %hT = rnn.scan @two_types inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>, tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %a = rnn.cast %ys#0 : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  %b = rnn.cast %ys#0 : tensor<?x?x4xf32> to tensor<?x?x4xf16>
  %c = rnn.cast %ys#1 : tensor<?x?x4xf32> to tensor<?x?x4xf64>
  return %a, %b, %c : tensor<?x?x4xbf16>, tensor<?x?x4xf16>, tensor<?x?x4xf64>
}

// -----

// Two scans of one cell: each reads the output only through a bf16 cast, so
// both change; a single step (rnn.step) changes with them.
// CHECK-LABEL: rnn.cell @shared
// CHECK-SAME: -> (tensor<?x4xbf16>)
// CHECK-LABEL: func.func @run
// CHECK-NOT: rnn.cast
// CHECK: rnn.scan @shared {{.*}} -> outputs(tensor<?x?x4xbf16>)
// CHECK-NOT: rnn.cast
// CHECK: rnn.scan @shared {{.*}} -> outputs(tensor<?x?x4xbf16>)
// CHECK-NOT: rnn.cast
// CHECK: rnn.step @shared {{.*}} -> outputs(tensor<?x4xbf16>)
// CHECK-NOT: rnn.cast
rnn.cell @shared inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @run(%xs: tensor<?x?x4xf32>, %x: tensor<?x4xf32>, %h0: tensor<?x4xf32>)
    -> (tensor<?x?x4xbf16>, tensor<?x?x4xbf16>, tensor<?x4xbf16>) {
  %a, %ha = rnn.scan @shared inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %b, %hb = rnn.scan @shared reverse inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %c, %hc = rnn.step @shared inputs(%x : tensor<?x4xf32>) states(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x4xf32>) states(tensor<?x4xf32>)
  %a16 = rnn.cast %a : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  %b16 = rnn.cast %b : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  %c16 = rnn.cast %c : tensor<?x4xf32> to tensor<?x4xbf16>
  return %a16, %b16, %c16 : tensor<?x?x4xbf16>, tensor<?x?x4xbf16>, tensor<?x4xbf16>
}

// -----

// One cell applied twice in a chain, the first scan's output (cast) the
// second's input: both applications change, the second reads the first's
// bf16 sequence directly.
// CHECK-LABEL: rnn.cell @chained
// CHECK-SAME: -> (tensor<?x4xbf16>)
// CHECK-LABEL: func.func @stack
// CHECK: %[[A:[^,]*]], %{{.*}} = rnn.scan @chained inputs(%arg0 : tensor<?x?x4xbf16>) {{.*}} -> outputs(tensor<?x?x4xbf16>)
// CHECK-NOT: rnn.cast
// CHECK: %[[B:[^,]*]], %{{.*}} = rnn.scan @chained inputs(%[[A]] : tensor<?x?x4xbf16>) {{.*}} -> outputs(tensor<?x?x4xbf16>)
// CHECK-NEXT: return %[[B]]
rnn.cell @chained inputs(%x: tensor<?x4xbf16>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %xe = rnn.cast %x : tensor<?x4xbf16> to tensor<?x4xf32>
  %y = rnn.add %xe, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @stack(%xs: tensor<?x?x4xbf16>, %h0: tensor<?x4xf32>) -> tensor<?x?x4xbf16> {
  %a, %ha = rnn.scan @chained inputs(%xs : tensor<?x?x4xbf16>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %a16 = rnn.cast %a : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  %b, %hb = rnn.scan @chained inputs(%a16 : tensor<?x?x4xbf16>) init(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %b16 = rnn.cast %b : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  return %b16 : tensor<?x?x4xbf16>
}

// -----

// Steps of one cell in a chain (a decoder): the same.
// CHECK-LABEL: func.func @decode
// CHECK: %[[Y1:[^,]*]], %{{.*}} = rnn.step @stepped inputs(%arg0 : tensor<?x4xbf16>) {{.*}} -> outputs(tensor<?x4xbf16>)
// CHECK-NEXT: %[[Y2:[^,]*]], %{{.*}} = rnn.step @stepped inputs(%[[Y1]] : tensor<?x4xbf16>)
// CHECK-NEXT: return %[[Y2]]
rnn.cell @stepped inputs(%x: tensor<?x4xbf16>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %xe = rnn.cast %x : tensor<?x4xbf16> to tensor<?x4xf32>
  %y = rnn.add %xe, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @decode(%x: tensor<?x4xbf16>, %h0: tensor<?x4xf32>) -> tensor<?x4xbf16> {
  %y1, %h1 = rnn.step @stepped inputs(%x : tensor<?x4xbf16>) states(%h0 : tensor<?x4xf32>)
      -> outputs(tensor<?x4xf32>) states(tensor<?x4xf32>)
  %y1b = rnn.cast %y1 : tensor<?x4xf32> to tensor<?x4xbf16>
  %y2, %h2 = rnn.step @stepped inputs(%y1b : tensor<?x4xbf16>) states(%h1 : tensor<?x4xf32>)
      -> outputs(tensor<?x4xf32>) states(tensor<?x4xf32>)
  %y2b = rnn.cast %y2 : tensor<?x4xf32> to tensor<?x4xbf16>
  return %y2b : tensor<?x4xbf16>
}

// -----

// Sequence lengths: the scan keeps them; masked steps yield zeros, which
// the cast keeps.
// CHECK-LABEL: func.func @masked
// CHECK: rnn.scan @with_lengths {{.*}}lengths(%arg2 : tensor<?xi32>) -> outputs(tensor<?x?x4xbf16>)
// CHECK-NOT: rnn.cast
rnn.cell @with_lengths inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  %y = rnn.add %x, %h : tensor<?x4xf32>, tensor<?x4xf32>
  rnn.yield outputs(%y : tensor<?x4xf32>) states(%y : tensor<?x4xf32>)
}
func.func @masked(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %len: tensor<?xi32>) -> tensor<?x?x4xbf16> {
  %ys, %hT = rnn.scan @with_lengths inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      lengths(%len : tensor<?xi32>) -> outputs(tensor<?x?x4xf32>) states(tensor<?x4xf32>)
  %c = rnn.cast %ys : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  return %c : tensor<?x?x4xbf16>
}
