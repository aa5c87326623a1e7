// RUN: rnn-opt %s --convert-step-loops-to-persistent-kernels --split-input-file | FileCheck %s

// A step of two dependent stages (the MGU's: f = sigmoid(x_f + h U_f^T);
// h' = (1 - f) h + f tanh(x_h + (f h) U_h^T), bf16 products, H = 512): one
// grid-wide kernel whose blocks hold both stages' rows (two gates: the g2
// layout), the stages' weights copied one after the other into the [2H, H]
// weight the library loads, and per step two exchanges of the staged vector
// (2t: h_{t-1} for stage 1, 2t + 1: f h for stage 2), each stage multiplying
// only its own tile.
// CHECK-LABEL: func.func @mgu_like
// CHECK-SAME: %[[UF:[a-z0-9]+]]: memref<512x512xbf16>, %[[UH:[a-z0-9]+]]: memref<512x512xbf16>
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<?x512xbf16>, %[[T:[a-z0-9]+]]: index)
// CHECK: scf.if %{{.*}} -> (i1) {
// CHECK:   %[[HBUF:.*]] = memref.alloc(%{{.*}}) : memref<2x?x520xbf16>
// CHECK:   memref.copy %[[S]], %{{.*}} : memref<?x512xbf16> to memref<?x512xbf16, strided<[520, 1], offset: ?>>
// CHECK:   %[[W:.*]] = memref.alloc() : memref<1024x512xbf16>
// CHECK:   %[[W1:.*]] = memref.subview %[[W]][0, 0] [512, 512] [1, 1]
// CHECK:   memref.copy %[[UF]], %[[W1]]
// CHECK:   %[[W2:.*]] = memref.subview %[[W]][512, 0] [512, 512] [1, 1]
// CHECK:   memref.copy %[[UH]], %[[W2]]
// CHECK:   gpu.launch {{.*}} blocks({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK:     func.call @rnn_persistent_fwd_g2_h512_begin(%{{.*}}, %[[FRAGMENTS:.*]], %c512_i32)
// CHECK:     scf.for %[[STEP:.*]] = %{{.*}} to %[[T]]
// Stage 1: exchange 2t, the tile of gate 0, sum of gate 0.
// CHECK:       %[[TWICE:.*]] = arith.muli %[[STEP]], %c2
// CHECK:       %[[E1:.*]] = arith.addi %[[TWICE]], %c0
// CHECK:       %[[E1P:.*]] = arith.index_cast %[[E1]] : index to i32
// CHECK:       func.call @rnn_persistent_fwd_g2_h512_stage(%[[E1P]],
// CHECK:       func.call @rnn_persistent_fwd_g2_h512_multiply(%[[E1P]], %{{.*}}, %[[FRAGMENTS]], %c0_i32{{.*}}, %c1_i32{{.*}})
// CHECK:       scf.for
// CHECK:         %[[G0:.*]] = arith.index_cast %c0{{.*}} : index to i32
// CHECK:         func.call @rnn_persistent_fwd_g2_h512_sum(%[[G0]],
// CHECK:         func.call @rnn_persistent_fwd_g2_h512_publish(
// CHECK:       %[[E1N:.*]] = arith.addi %[[E1]], %c1
// CHECK:       %[[E1NP:.*]] = arith.index_cast %[[E1N]] : index to i32
// CHECK:       func.call @rnn_persistent_fwd_g2_h512_release(%{{.*}}, %{{.*}}, %{{.*}}, %[[E1NP]])
// Stage 2: exchange 2t + 1, the tile of gate 1, sum of gate 1.
// CHECK:       %[[TWICE2:.*]] = arith.muli %[[STEP]], %c2
// CHECK:       %[[E2:.*]] = arith.addi %[[TWICE2]], %c1
// CHECK:       %[[E2P:.*]] = arith.index_cast %[[E2]] : index to i32
// CHECK:       func.call @rnn_persistent_fwd_g2_h512_stage(%[[E2P]],
// CHECK:       func.call @rnn_persistent_fwd_g2_h512_multiply(%[[E2P]], %{{.*}}, %[[FRAGMENTS]], %c1_i32{{.*}}, %c1_i32{{.*}})
// CHECK:       scf.for
// CHECK:         %[[G1:.*]] = arith.index_cast %c1{{.*}} : index to i32
// CHECK:         func.call @rnn_persistent_fwd_g2_h512_sum(%[[G1]],
// CHECK:         func.call @rnn_persistent_tanh
// CHECK:         func.call @rnn_persistent_fwd_g2_h512_publish(
// CHECK:       func.call @rnn_persistent_fwd_g2_h512_release(
// CHECK-NOT:   func.call @rnn_persistent_fwd_g2_h512_stage
// CHECK:     gpu.terminator
// After a launch that ran: the state of exchange 2T back into S; the
// weight copy freed either way.
// CHECK:   scf.if %{{.*}} {
// CHECK:     %[[END:.*]] = arith.muli %[[T]], %c2
// CHECK:     arith.remui %[[END]], %c2
// CHECK:     memref.copy %{{.*}}, %[[S]]
// CHECK:   memref.dealloc %[[HBUF]]
// CHECK:   memref.dealloc %[[W]]
// The step loop stays as the fallback.
// CHECK: scf.if
// CHECK:   scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @mgu_like(%xp: memref<?x?x1024xf32>, %uf: memref<512x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x512xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f = memref.alloc(%B) : memref<?x512xf32>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p1 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %p1, %h : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32>, memref<?x512xf32>) outs(%f, %fh : memref<?x512xf32>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %h, %xh, %bh, %p2 : memref<?x512xf32>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  memref.dealloc %f : memref<?x512xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x512xf32>
  return
}

// -----

// Stage 2's vector read after the loop: the kernel never stores it, so the
// loop stays.
// CHECK-LABEL: func.func @next_vector_read_after
// CHECK-NOT: gpu.launch
// CHECK: scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @next_vector_read_after(%xp: memref<?x?x1024xf32>, %uf: memref<512x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x512xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f = memref.alloc(%B) : memref<?x512xf32>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p1 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %p1, %h : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32>, memref<?x512xf32>) outs(%f, %fh : memref<?x512xf32>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %h, %xh, %bh, %p2 : memref<?x512xf32>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  %read = memref.load %fh[%c0, %c0] : memref<?x512xbf16>
  memref.dealloc %f : memref<?x512xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x512xf32>
  return
}

// -----

// Stage 1's group reading stage 2's vector (of the step before): the kernel
// holds only a stage's own vector and the stage before's, so the loop stays.
// CHECK-LABEL: func.func @reads_next_vector
// CHECK-NOT: gpu.launch
// CHECK: scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @reads_next_vector(%xp: memref<?x?x1024xf32>, %uf: memref<512x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x512xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f = memref.alloc(%B) : memref<?x512xf32>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p1 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %p1, %h, %fh : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32>, memref<?x512xf32>, memref<?x512xbf16>) outs(%f, %fh : memref<?x512xf32>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_x: bf16, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %h, %xh, %bh, %p2 : memref<?x512xf32>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  memref.dealloc %f : memref<?x512xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x512xf32>
  return
}

// -----

// Four gates in stage 1 and one in stage 2: five gates' rows a block, more
// than any layout holds (the LSTM's four), so the loop stays.
// CHECK-LABEL: func.func @five_gates
// CHECK-NOT: gpu.launch
// CHECK: scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @five_gates(%xp: memref<?x?x1024xf32>, %uf: memref<2048x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x2048xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f = memref.alloc(%B) : memref<?x512xf32>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x2048xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<2048x512xbf16>) outs(%p1 : memref<?x2048xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %g1 = memref.subview %p1[0, 0] [%B, 512] [1, 1] : memref<?x2048xf32> to memref<?x512xf32, strided<[2048, 1]>>
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %g1, %h : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32, strided<[2048, 1]>>, memref<?x512xf32>) outs(%f, %fh : memref<?x512xf32>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %h, %xh, %bh, %p2 : memref<?x512xf32>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  memref.dealloc %f : memref<?x512xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x2048xf32>
  return
}

// -----

// Stage 2's weight as [H, G·H] (x W rather than x W^T: weight layout 1):
// the set-up transposes it into its rows of the library's weight.
// CHECK-LABEL: func.func @weight_in_out
// CHECK-SAME: %[[UF:[a-z0-9]+]]: memref<512x512xbf16>, %[[UH:[a-z0-9]+]]: memref<512x512xbf16>
// CHECK: %[[W:.*]] = memref.alloc() : memref<1024x512xbf16>
// CHECK: %[[W1:.*]] = memref.subview %[[W]][0, 0] [512, 512] [1, 1]
// CHECK: memref.copy %[[UF]], %[[W1]]
// CHECK: %[[W2:.*]] = memref.subview %[[W]][512, 0] [512, 512] [1, 1]
// CHECK: linalg.transpose ins(%[[UH]] : memref<512x512xbf16>) outs(%[[W2]] : {{.*}}) permutation = [1, 0]
// CHECK: gpu.launch
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#bt = affine_map<(d0, d1, d2) -> (d2, d1)>
func.func @weight_in_out(%xp: memref<?x?x1024xf32>, %uf: memref<512x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x512xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f = memref.alloc(%B) : memref<?x512xf32>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p1 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %p1, %h : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32>, memref<?x512xf32>) outs(%f, %fh : memref<?x512xf32>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %h, %xh, %bh, %p2 : memref<?x512xf32>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  memref.dealloc %f : memref<?x512xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x512xf32>
  return
}

// -----

// Stage 1's group reading the block argument of what it writes into stage
// 2's vector: the kernel stages that vector rather than storing it, so the
// loop stays.
// CHECK-LABEL: func.func @reads_own_output
// CHECK-NOT: gpu.launch
// CHECK: scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @reads_own_output(%xp: memref<?x?x1024xf32>, %uf: memref<512x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x512xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f = memref.alloc(%B) : memref<?x512xf32>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p1 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %p1, %h : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32>, memref<?x512xf32>) outs(%f, %fh : memref<?x512xf32>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %o = arith.extf %out_1 : bf16 to f32
      %q6 = arith.addf %6, %o : f32
      %7 = arith.truncf %q6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %h, %xh, %bh, %p2 : memref<?x512xf32>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  memref.dealloc %f : memref<?x512xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x512xf32>
  return
}

// -----

// One group writes columns 0..H of a buffer and the other reads columns
// H/2..3H/2 through views hoisted out of the loop: elements of other blocks'
// units, so the loop stays.
// CHECK-LABEL: func.func @shifted_view
// CHECK-NOT: gpu.launch
// CHECK: scf.for
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @shifted_view(%xp: memref<?x?x1024xf32>, %uf: memref<512x512xbf16>, %uh: memref<512x512xbf16>, %bias: memref<1024xf32>, %h: memref<?x512xf32>, %ys: memref<?x?x512xf32>, %s: memref<?x512xbf16>, %T: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %B = memref.dim %s, %c0 : memref<?x512xbf16>
  %p1 = memref.alloc(%B) : memref<?x512xf32>
  %p2 = memref.alloc(%B) : memref<?x512xf32>
  %fh = memref.alloc(%B) : memref<?x512xbf16>
  %f2 = memref.alloc(%B) : memref<?x1024xf32>
  %f = memref.subview %f2[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32> to memref<?x512xf32, strided<[1024, 1]>>
  %fr = memref.subview %f2[0, 256] [%B, 512] [1, 1] : memref<?x1024xf32> to memref<?x512xf32, strided<[1024, 1], offset: 256>>
  scf.for %t = %c0 to %T step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %B, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s, %uf : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p1 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xf = memref.subview %x[0, 0] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bf = memref.subview %bias[0] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1]>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %bf, %p1, %h : memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1]>>, memref<?x512xf32>, memref<?x512xf32>) outs(%f, %fh : memref<?x512xf32, strided<[1024, 1]>>, memref<?x512xbf16>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32, %out_1: bf16):
      %0 = arith.addf %in, %in_1 : f32
      %1 = arith.addf %0, %in_2 : f32
      %2 = arith.negf %1 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %3, %one : f32
      %5 = arith.divf %one, %4 : f32
      %6 = arith.mulf %5, %in_3 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %5, %7 : f32, bf16
    }
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x512xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%fh, %uh : memref<?x512xbf16>, memref<512x512xbf16>) outs(%p2 : memref<?x512xf32>) attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %e0 = arith.extf %in : bf16 to f32
      %e1 = arith.extf %w : bf16 to f32
      %m = arith.mulf %e0, %e1 : f32
      %sum = arith.addf %acc, %m : f32
      linalg.yield %sum : f32
    }
    %xh = memref.subview %x[0, 512] [%B, 512] [1, 1] : memref<?x1024xf32, strided<[1024, 1], offset: ?>> to memref<?x512xf32, strided<[1024, 1], offset: ?>>
    %bh = memref.subview %bias[512] [512] [1] : memref<1024xf32> to memref<512xf32, strided<[1], offset: 512>>
    %y = memref.subview %ys[%t, 0, 0] [1, %B, 512] [1, 1, 1] : memref<?x?x512xf32> to memref<?x512xf32, strided<[512, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #col, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%fr, %h, %xh, %bh, %p2 : memref<?x512xf32, strided<[1024, 1], offset: 256>>, memref<?x512xf32>, memref<?x512xf32, strided<[1024, 1], offset: ?>>, memref<512xf32, strided<[1], offset: 512>>, memref<?x512xf32>) outs(%h, %s, %y : memref<?x512xf32>, memref<?x512xbf16>, memref<?x512xf32, strided<[512, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32, %out_1: bf16, %out_2: f32):
      %0 = arith.subf %one, %in : f32
      %1 = arith.mulf %0, %in_1 : f32
      %2 = arith.addf %in_2, %in_3 : f32
      %3 = arith.addf %2, %in_4 : f32
      %4 = math.tanh %3 : f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %1, %5 : f32
      %7 = arith.truncf %6 : f32 to bf16
      linalg.yield %6, %7, %6 : f32, bf16, f32
    }
  }
  memref.dealloc %f2 : memref<?x1024xf32>
  memref.dealloc %fh : memref<?x512xbf16>
  memref.dealloc %p2 : memref<?x512xf32>
  memref.dealloc %p1 : memref<?x512xf32>
  return
}
