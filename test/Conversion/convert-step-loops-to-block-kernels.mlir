// RUN: rnn-opt %s --convert-step-loops-to-block-kernels --split-input-file | FileCheck %s
// RUN: rnn-opt %s --convert-step-loops-to-block-kernels=max-shared-bytes=4096 --split-input-file | FileCheck %s --check-prefix=SMALL

// A vanilla RNN step (f32, H = 32, one gate) whose product accumulates onto
// the step's projection: one kernel of B blocks of 32 threads, U (4 KiB)
// and h_{t-1} in shared memory, the projection loaded a step ahead and the
// biases once, one barrier a step; the loop kept for large batches.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @rnn_tanh_like
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<?x?x32xf32>, %[[U:[a-z0-9]+]]: memref<32x32xf32>, %[[B1:[a-z0-9]+]]: memref<32xf32>, %[[B2:[a-z0-9]+]]: memref<32xf32>, %[[YS:[a-z0-9]+]]: memref<?x?x32xf32>, %[[S:[a-z0-9]+]]: memref<?x32xf32>, %[[T:[a-z0-9]+]]: index)
// CHECK: linalg.copy
// CHECK: %[[B:.*]] = memref.dim %[[S]], %{{.*}} : memref<?x32xf32>
// CHECK: %[[ON:.*]] = call @rnn_cuda_persistent_enabled() : () -> i32
// CHECK: arith.cmpi ne, %[[ON]]
// CHECK: arith.cmpi sgt, %[[T]]
// CHECK: arith.cmpi ugt, %[[B]]
// The cost model's largest batch: 3400 / (1 gate x 32 x 1 warp) x 132 SMs.
// CHECK: arith.cmpi ule, %[[B]], %c13992
// CHECK: scf.if %{{.*}} {
// CHECK:   %[[BLOCKS:.*]] = arith.muli %[[B]], %c1
// CHECK:   gpu.launch blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c32{{.*}}) dynamic_shared_memory_size %c4352_i32
// CHECK:     %[[ROW:.*]] = arith.divui %[[BX]], %c1
// CHECK:     %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK:     %[[W:.*]] = memref.view %[[SHARED]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x32x32xf32, #gpu.address_space<workgroup>>
// CHECK:     %[[STAGED:.*]] = memref.view %[[SHARED]][%c4096][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x32xf32, #gpu.address_space<workgroup>>
// U's rows along K (coalesced), stored as [gate][k][unit].
// CHECK:     scf.for %[[I:.*]] = %[[TX]] to %c1024 step %c32
// CHECK:       %[[K:.*]] = arith.remui %[[I]], %c32
// CHECK:       %[[GN:.*]] = arith.divui %[[I]], %c32
// CHECK:       %[[N:.*]] = arith.remui %[[GN]], %c32
// CHECK:       %[[G:.*]] = arith.divui %[[GN]], %c32
// CHECK:       %[[WV:.*]] = memref.load %[[U]][%[[GN]], %[[K]]]
// CHECK:       memref.store %[[WV]], %[[W]][%[[G]], %[[K]], %[[N]]]
// CHECK:     %[[ACTIVE:.*]] = arith.cmpi ult, %[[TX]], %c32
// CHECK:     scf.if %[[ACTIVE]] {
// CHECK:       %[[H0:.*]] = memref.load %[[S]][%[[ROW]], %{{.*}}]
// CHECK:       memref.store %[[H0]], %[[STAGED]][%{{.*}}, %[[TX]]]
// The first step's projection, and the biases, before the loop.
// CHECK:     %[[FIRST:.*]]:3 = scf.if %[[ACTIVE]] -> (f32, f32, f32) {
// CHECK:       memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<?x32xf32, strided<[32, 1], offset: ?>>
// CHECK:       memref.load %[[B1]]
// CHECK:       memref.load %[[B2]]
// CHECK:     gpu.barrier
// CHECK:     scf.for %[[STEP:.*]] = %{{.*}} to %[[T]] step %{{.*}} iter_args(%[[P:.*]] = %[[FIRST]]#0, %[[C1:.*]] = %[[FIRST]]#1, %[[C2:.*]] = %[[FIRST]]#2) -> (f32, f32, f32) {
// CHECK:       %[[PARITY:.*]] = arith.remui %[[STEP]], %c2
// CHECK:       %[[NEXT_PARITY:.*]] = arith.subi %{{.*}}, %[[PARITY]]
// CHECK:       %[[Y:.*]] = memref.subview %[[YS]][%[[STEP]], 0, 0]
// CHECK:       arith.minui
// CHECK:       scf.if %[[ACTIVE]] -> (f32, f32, f32) {
// The next step's projection, loaded before the product.
// CHECK:         %[[PNEXT:.*]] = memref.load
// CHECK:         %[[SUM:.*]] = scf.for %[[KK:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:           %[[HK:.*]] = memref.load %[[STAGED]][%[[PARITY]], %[[KK]]]
// CHECK:           %[[WK:.*]] = memref.load %[[W]][%{{.*}}, %[[KK]], %[[TX]]]
// CHECK:           math.fma %[[HK]], %[[WK]], %[[ACC]] : f32
// CHECK:         %[[PRE:.*]] = arith.addf %[[P]], %[[SUM]]
// CHECK:         arith.addf %[[PRE]], %[[C1]]
// CHECK:         %[[HNEW:.*]] = math.tanh
// CHECK:         memref.store %[[HNEW]], %[[STAGED]][%[[NEXT_PARITY]], %[[TX]]]
// CHECK:         memref.store %[[HNEW]], %[[S]][%[[ROW]], %{{.*}}]
// CHECK:         memref.store %[[HNEW]], %[[Y]][%[[ROW]], %{{.*}}]
// CHECK:         scf.yield %[[PNEXT]], %[[C1]], %[[C2]]
// CHECK:       } else {
// CHECK:         scf.yield %[[P]], %[[C1]], %[[C2]]
// CHECK:       gpu.barrier
// CHECK:   } {rnn.persistent_launch}
// CHECK: } else {
// CHECK:   scf.for
// CHECK:     linalg.generic {{.*}} attrs = {rnn.gemm_weight_layout = 0 : i32}
// CHECK:     linalg.generic
// CHECK: return
// SMALL-LABEL: func.func @rnn_tanh_like
// SMALL-NOT: gpu.launch
// SMALL: scf.for
func.func @rnn_tanh_like(%x: memref<?x?x32xf32>, %u: memref<32x32xf32>,
                         %b1: memref<32xf32>, %b2: memref<32xf32>,
                         %ys: memref<?x?x32xf32>, %s: memref<?x32xf32>,
                         %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %s, %c0 : memref<?x32xf32>
  // The loop's own projection buffer (the input, in place of its product).
  %xp = memref.alloc(%steps, %batch) : memref<?x?x32xf32>
  linalg.copy ins(%x : memref<?x?x32xf32>) outs(%xp : memref<?x?x32xf32>)
  scf.for %t = %c0 to %steps step %c1 {
    %p = memref.subview %xp[%t, 0, 0] [1, %batch, 32] [1, 1, 1] : memref<?x?x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x32xf32>, memref<32x32xf32>) outs(%p : memref<?x32xf32, strided<[32, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 32] [1, 1, 1] : memref<?x?x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #col, #col, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p, %b1, %b2 : memref<?x32xf32, strided<[32, 1], offset: ?>>, memref<32xf32>, memref<32xf32>)
        outs(%s, %y : memref<?x32xf32>, memref<?x32xf32, strided<[32, 1], offset: ?>>) {
    ^bb0(%in: f32, %c: f32, %d: f32, %o: f32, %o2: f32):
      %0 = arith.addf %in, %c : f32
      %1 = arith.addf %0, %d : f32
      %2 = math.tanh %1 : f32
      linalg.yield %2, %2 : f32, f32
    }
  }
  memref.dealloc %xp : memref<?x?x32xf32>
  return
}

// -----

// A head-wise step (2 heads of 8 units, 2 gates, bf16 state copy S and
// weight): 2 * B blocks, block b runs head b % 2 of row b / 2; the f32
// state h, read and written by the group, stays in a register across steps.
#id = affine_map<(d0, d1) -> (d0, d1)>
#hx = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
#hw = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>
#ho = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-LABEL: func.func @headwise_like
// CHECK-SAME: %[[XP:[a-z0-9]+]]: memref<?x?x32xf32>, %[[R:[a-z0-9]+]]: memref<2x16x8xbf16>, %[[H:[a-z0-9]+]]: memref<?x16xf32>
// CHECK: %[[B:.*]] = memref.dim %[[H]]
// CHECK: %[[S:.*]] = memref.alloc(%[[B]]) : memref<?x16xbf16>
// 3400 / (2 gates x 8 x 1 warp) x 132 SMs / 2 heads.
// CHECK: arith.cmpi ule, %{{.*}}, %c13992
// CHECK: %[[BLOCKS:.*]] = arith.muli %{{.*}}, %c2
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c32{{.*}}) dynamic_shared_memory_size %c320_i32
// CHECK:   %[[HEAD:.*]] = arith.remui %[[BX]], %c2
// CHECK:   %[[ROW:.*]] = arith.divui %[[BX]], %c2
// CHECK:   %[[HEADCOL:.*]] = arith.muli %[[HEAD]], %c8
// CHECK:   memref.view {{.*}} to memref<2x8x8xbf16, #gpu.address_space<workgroup>>
// CHECK:   memref.view {{.*}}[%c256][] {{.*}} to memref<2x8xf32, #gpu.address_space<workgroup>>
// CHECK:   memref.load %[[R]][%[[HEAD]], %{{.*}}, %{{.*}}] : memref<2x16x8xbf16>
// CHECK:   %[[ACTIVE:.*]] = arith.cmpi ult, %[[TX]], %c8
// CHECK:   %[[COL:.*]] = arith.addi %[[HEADCOL]], %[[TX]]
// CHECK:   %[[S0:.*]] = memref.load %[[S]][%[[ROW]], %[[COL]]] : memref<?x16xbf16>
// CHECK:   arith.extf %[[S0]] : bf16 to f32
// CHECK:   scf.if %[[ACTIVE]] -> (f32, f32, f32)
// CHECK:     memref.load
// CHECK:     memref.load
// CHECK:     memref.load %[[H]][%[[ROW]], %[[COL]]]
// CHECK:   gpu.barrier
// CHECK:   scf.for {{.*}} iter_args(%[[XA:.*]] = %{{.*}}, %[[XB:.*]] = %{{.*}}, %[[HC:.*]] = %{{.*}}) -> (f32, f32, f32)
// Two gate sums over the head's 8 inputs, one weight load each.
// CHECK:     scf.for {{.*}} -> (f32, f32)
// CHECK-COUNT-2: math.fma
// CHECK:     %[[GA:.*]] = arith.addf %{{.*}}#0, %[[XA]]
// CHECK:     %[[GB:.*]] = arith.addf %{{.*}}#1, %[[XB]]
// CHECK:     %[[HNEW:.*]] = arith.addf %{{.*}}, %[[HC]]
// CHECK:     %[[SNEW:.*]] = arith.truncf %[[HNEW]] : f32 to bf16
// CHECK:     memref.store %[[HNEW]], %[[H]][%[[ROW]], %[[COL]]]
// CHECK:     %[[SEXT:.*]] = arith.extf %[[SNEW]] : bf16 to f32
// CHECK:     memref.store %[[SEXT]], %{{.*}}[%{{.*}}, %[[TX]]] : memref<2x8xf32, #gpu.address_space<workgroup>>
// CHECK:     memref.store %[[SNEW]], %[[S]][%[[ROW]], %[[COL]]]
// CHECK:     scf.yield %{{.*}}, %{{.*}}, %[[HNEW]]
// CHECK: } {rnn.persistent_launch}
func.func @headwise_like(%xp: memref<?x?x32xf32>, %r: memref<2x16x8xbf16>,
                         %h: memref<?x16xf32>, %ys: memref<?x?x16xf32>,
                         %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %h, %c0 : memref<?x16xf32>
  %s = memref.alloc(%batch) : memref<?x16xbf16>
  %p = memref.alloc(%batch) : memref<?x2x2x8xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 32] [1, 1, 1] : memref<?x?x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
    %rv = memref.expand_shape %r [[0], [1, 2], [3]] output_shape [2, 2, 8, 8] : memref<2x16x8xbf16> into memref<2x2x8x8xbf16>
    %sv = memref.expand_shape %s [[0], [1, 2]] output_shape [%batch, 2, 8] : memref<?x16xbf16> into memref<?x2x8xbf16>
    linalg.fill ins(%zero : f32) outs(%p : memref<?x2x2x8xf32>)
    linalg.generic {indexing_maps = [#hx, #hw, #ho], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%sv, %rv : memref<?x2x8xbf16>, memref<2x2x8x8xbf16>) outs(%p : memref<?x2x2x8xf32>) {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %pc = memref.collapse_shape %p [[0], [1, 2, 3]] : memref<?x2x2x8xf32> into memref<?x32xf32>
    %g0 = memref.subview %pc[0, 0] [%batch, 16] [1, 1] : memref<?x32xf32> to memref<?x16xf32, strided<[32, 1]>>
    %g1 = memref.subview %pc[0, 16] [%batch, 16] [1, 1] : memref<?x32xf32> to memref<?x16xf32, strided<[32, 1], offset: 16>>
    %x0 = memref.subview %x[0, 0] [%batch, 16] [1, 1] : memref<?x32xf32, strided<[32, 1], offset: ?>> to memref<?x16xf32, strided<[32, 1], offset: ?>>
    %x1 = memref.subview %x[0, 16] [%batch, 16] [1, 1] : memref<?x32xf32, strided<[32, 1], offset: ?>> to memref<?x16xf32, strided<[32, 1], offset: ?>>
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 16] [1, 1, 1] : memref<?x?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %g1, %x0, %x1, %h : memref<?x16xf32, strided<[32, 1]>>, memref<?x16xf32, strided<[32, 1], offset: 16>>, memref<?x16xf32, strided<[32, 1], offset: ?>>, memref<?x16xf32, strided<[32, 1], offset: ?>>, memref<?x16xf32>)
        outs(%h, %s, %y : memref<?x16xf32>, memref<?x16xbf16>, memref<?x16xf32, strided<[16, 1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32, %xa: f32, %xb: f32, %hh: f32, %o1: f32, %o2: bf16, %o3: f32):
      %0 = arith.addf %a, %xa : f32
      %1 = arith.addf %b, %xb : f32
      %2 = math.tanh %0 : f32
      %3 = arith.mulf %2, %1 : f32
      %4 = arith.addf %3, %hh : f32
      %5 = arith.truncf %4 : f32 to bf16
      linalg.yield %4, %5, %4 : f32, bf16, f32
    }
  }
  memref.dealloc %p : memref<?x2x2x8xf32>
  memref.dealloc %s : memref<?x16xbf16>
  return
}

// -----

// A head's weights beyond shared memory (f32, H = 256: 256 KiB): the loop
// stays as it is.
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @too_large
// CHECK-NOT: gpu.launch
// CHECK: scf.for
func.func @too_large(%xp: memref<?x?x256xf32>, %u: memref<256x256xf32>,
                     %s: memref<?x256xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %s, %c0 : memref<?x256xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %p = memref.subview %xp[%t, 0, 0] [1, %batch, 256] [1, 1, 1] : memref<?x?x256xf32> to memref<?x256xf32, strided<[256, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x256xf32>, memref<256x256xf32>) outs(%p : memref<?x256xf32, strided<[256, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p : memref<?x256xf32, strided<[256, 1], offset: ?>>) outs(%s : memref<?x256xf32>) {
    ^bb0(%in: f32, %o: f32):
      %0 = math.tanh %in : f32
      linalg.yield %0 : f32
    }
  }
  return
}

// -----

// Two pointwise groups in a step (a second stage): not the form; the loop
// stays.
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @two_groups
// CHECK-NOT: gpu.launch
// CHECK: scf.for
func.func @two_groups(%xp: memref<?x?x32xf32>, %u: memref<32x32xf32>,
                      %s: memref<?x32xf32>, %q: memref<?x32xf32>,
                      %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %s, %c0 : memref<?x32xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %p = memref.subview %xp[%t, 0, 0] [1, %batch, 32] [1, 1, 1] : memref<?x?x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x32xf32>, memref<32x32xf32>) outs(%p : memref<?x32xf32, strided<[32, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p : memref<?x32xf32, strided<[32, 1], offset: ?>>) outs(%q : memref<?x32xf32>) {
    ^bb0(%in: f32, %o: f32):
      %0 = math.tanh %in : f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%q : memref<?x32xf32>) outs(%s : memref<?x32xf32>) {
    ^bb0(%in: f32, %o: f32):
      %0 = math.tanh %in : f32
      linalg.yield %0 : f32
    }
  }
  return
}
