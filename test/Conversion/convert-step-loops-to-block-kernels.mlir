// RUN: rnn-opt %s --convert-step-loops-to-block-kernels --split-input-file | FileCheck %s
// RUN: rnn-opt %s --convert-step-loops-to-block-kernels=max-shared-bytes=128 --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: rnn-opt %s --convert-step-loops-to-block-kernels=max-cluster-size=2 --split-input-file | FileCheck %s --check-prefix=CLUSTER
// RUN: rnn-opt %s --convert-step-loops-to-block-kernels=max-cluster-size=8 --split-input-file | FileCheck %s --check-prefix=COST
// RUN: not rnn-opt %s --convert-step-loops-to-block-kernels=max-cluster-size=32 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD-CLUSTER
// RUN: not rnn-opt %s --convert-step-loops-to-block-kernels=max-cluster-size=12 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD-CLUSTER
// BAD-CLUSTER: error: convert-step-loops-to-block-kernels: max-cluster-size must be a power of two from 1 to 16, got {{32|12}}

// A vanilla RNN step (f32, H = 32, one gate) whose product accumulates onto
// the step's projection: one kernel of B blocks; each unit's 32 inputs are
// split over 2 lanes (64 threads), each holding its 16 weights in
// registers; h_{t-1} staged in shared memory (256 bytes), the projection
// loaded a step ahead and the biases once, one barrier a step. Past the
// batches whose blocks all fit on the multiprocessors at once, one lane a
// unit (smaller blocks, more of them at once): a second kernel of 32
// threads for those batches, and the loop kept for larger ones.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @rnn_tanh_like
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<?x?x32xf32>, %[[U:[a-z0-9]+]]: memref<32x32xf32>, %[[B1:[a-z0-9]+]]: memref<32xf32>, %[[B2:[a-z0-9]+]]: memref<32xf32>, %[[YS:[a-z0-9]+]]: memref<?x?x32xf32>, %[[S:[a-z0-9]+]]: memref<?x32xf32>, %[[T:[a-z0-9]+]]: index)
// CHECK: linalg.copy
// CHECK: %[[ON:.*]] = call @rnn_cuda_persistent_enabled() : () -> i32
// CHECK: arith.cmpi ne, %[[ON]]
// CHECK: %[[B:.*]] = memref.dim %[[S]], %{{.*}} : memref<?x32xf32>
// CHECK: arith.cmpi ugt, %[[B]]
// The largest batch for 2 lanes a unit: 18 blocks on each of 132 SMs.
// CHECK: arith.cmpi ule, %[[B]], %c2376
// CHECK: arith.cmpi sgt, %[[T]]
// CHECK: scf.if %{{.*}} {
// CHECK:   %[[BLOCKS:.*]] = arith.muli %[[B]], %c1
// CHECK:   gpu.launch blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c64{{.*}}) dynamic_shared_memory_size %c256_i32
// CHECK:     %[[ROW:.*]] = arith.divui %[[BX]], %c1
// CHECK:     %[[UNIT:.*]] = arith.divui %[[TX]], %c2
// CHECK:     %[[SLICE:.*]] = arith.remui %[[TX]], %c2
// CHECK:     %[[ACTIVE:.*]] = arith.cmpi ult, %[[TX]], %c64
// CHECK:     %[[FIRST:.*]] = arith.cmpi eq, %[[SLICE]]
// CHECK:     %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK:     %[[STAGED:.*]] = memref.view %[[SHARED]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x32xf32, #gpu.address_space<workgroup>>
// The lane's 16 weights, read once (zero beyond K).
// CHECK-COUNT-16: memref.load %[[U]]
// CHECK-NOT: memref.load %[[U]]
// CHECK:     memref.store %{{.*}}, %[[STAGED]]
// CHECK:     gpu.barrier
// CHECK:     %[[STAGE:.*]] = arith.andi %[[ACTIVE]], %[[FIRST]]
// CHECK:     scf.if %[[STAGE]] {
// CHECK:       %[[H0:.*]] = memref.load %[[S]][%[[ROW]], %{{.*}}]
// CHECK:       memref.store %[[H0]], %[[STAGED]]
// The first step's projection, and the biases, before the loop.
// CHECK:     %[[P0:.*]] = memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<?x32xf32, strided<[32, 1], offset: ?>>
// CHECK:     %[[C10:.*]] = memref.load %[[B1]]
// CHECK:     %[[C20:.*]] = memref.load %[[B2]]
// CHECK:     gpu.barrier
// CHECK:     scf.for %[[STEP:.*]] = %{{.*}} to %[[T]] step %{{.*}} iter_args(%[[P:.*]] = %[[P0]], %[[C1:.*]] = %[[C10]], %[[C2:.*]] = %[[C20]]) -> (f32, f32, f32) {
// CHECK:       %[[PARITY:.*]] = arith.remui %[[STEP]], %c2
// CHECK:       %[[NEXT_PARITY:.*]] = arith.subi %{{.*}}, %[[PARITY]]
// CHECK:       %[[Y:.*]] = memref.subview %[[YS]][%[[STEP]], 0, 0]
// CHECK:       arith.minui
// The next step's projection, loaded before the product.
// CHECK:       %[[PNEXT:.*]] = memref.load
// 16 products of the staged h_{t-1} with the registers, then the other
// lane's half.
// CHECK-COUNT-16: math.fma
// CHECK-NOT:   math.fma
// CHECK:       %[[OTHER:.*]], %{{.*}} = gpu.shuffle xor %[[PART:.*]], %{{.*}}, %{{.*}} : f32
// CHECK:       %[[SUM:.*]] = arith.addf %[[PART]], %[[OTHER]]
// CHECK:       scf.if %[[ACTIVE]] -> (f32, f32, f32) {
// CHECK:         %[[PRE:.*]] = arith.addf %[[P]], %[[SUM]]
// CHECK:         arith.addf %[[PRE]], %[[C1]]
// CHECK:         %[[HNEW:.*]] = math.tanh
// The unit's first lane stores.
// CHECK:         scf.if %[[FIRST]] {
// CHECK:           memref.store %[[HNEW]], %[[STAGED]][%[[NEXT_PARITY]], %{{.*}}]
// CHECK:           memref.store %[[HNEW]], %[[S]][%[[ROW]], %{{.*}}]
// CHECK:           memref.store %[[HNEW]], %[[Y]][%[[ROW]], %{{.*}}]
// CHECK:         scf.yield %[[PNEXT]], %[[C1]], %[[C2]]
// CHECK:       } else {
// CHECK:         scf.yield %[[P]], %[[C1]], %[[C2]]
// CHECK:       gpu.barrier
// CHECK:   } {rnn.persistent_launch}
// CHECK: } else {
// Larger batches: one lane a unit, all 32 inputs.
// CHECK:   arith.cmpi ule, %{{.*}}, %c33264
// CHECK:   scf.if %{{.*}} {
// CHECK:     gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32{{.*}}) dynamic_shared_memory_size %c256_i32
// CHECK-COUNT-32: math.fma
// CHECK-NOT:       gpu.shuffle
// CHECK:     } {rnn.persistent_launch}
// CHECK:   } else {
// CHECK:     scf.for
// CHECK:       linalg.generic {{.*}} attrs = {rnn.gemm_weight_layout = 0 : i32}
// CHECK:       linalg.generic
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
// weight): 2 * B blocks, block b runs head b % 2 of row b / 2, one lane a
// unit (8 inputs each); the f32 state h, read and written by the group,
// stays in a register across steps.
#id = affine_map<(d0, d1) -> (d0, d1)>
#hx = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
#hw = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>
#ho = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-LABEL: func.func @headwise_like
// CHECK-SAME: %[[XP:[a-z0-9]+]]: memref<?x?x32xf32>, %[[R:[a-z0-9]+]]: memref<2x16x8xbf16>, %[[H:[a-z0-9]+]]: memref<?x16xf32>
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?x16xbf16>
// 16 waves of 32 blocks on each of 132 SMs, over 2 heads (a head-wise step
// loop launches a batched GEMM per gate: 3 launches a step here).
// CHECK: arith.cmpi ule, %{{.*}}, %c33792
// CHECK: %[[BLOCKS:.*]] = arith.muli %{{.*}}, %c2
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c32{{.*}}) dynamic_shared_memory_size %c64_i32
// CHECK:   %[[HEAD:.*]] = arith.remui %[[BX]], %c2
// CHECK:   %[[ROW:.*]] = arith.divui %[[BX]], %c2
// CHECK:   %[[HEADCOL:.*]] = arith.muli %[[HEAD]], %c8
// CHECK:   %[[ACTIVE:.*]] = arith.cmpi ult, %[[TX]], %c8
// CHECK:   %[[COL:.*]] = arith.addi %[[HEADCOL]], %{{.*}}
// CHECK:   memref.view {{.*}} to memref<2x8xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-16: memref.load %[[R]][%[[HEAD]], %{{.*}}, %{{.*}}] : memref<2x16x8xbf16>
// CHECK:   %[[S0:.*]] = memref.load %[[S]][%[[ROW]], %[[COL]]] : memref<?x16xbf16>
// CHECK:   arith.extf %[[S0]] : bf16 to f32
// CHECK:   memref.load
// CHECK:   memref.load
// CHECK:   memref.load %[[H]][%[[ROW]], %[[COL]]]
// CHECK:   gpu.barrier
// CHECK:   scf.for {{.*}} iter_args(%[[XA:.*]] = %{{.*}}, %[[XB:.*]] = %{{.*}}, %[[HC:.*]] = %{{.*}}) -> (f32, f32, f32)
// Two gate sums over the head's 8 inputs; one lane a unit: no shuffles.
// CHECK-COUNT-16: math.fma
// CHECK-NOT: gpu.shuffle
// CHECK:     scf.if %[[ACTIVE]]
// CHECK:     %[[GA:.*]] = arith.addf %{{.*}}, %[[XA]]
// CHECK:     %[[GB:.*]] = arith.addf %{{.*}}, %[[XB]]
// CHECK:     %[[HNEW:.*]] = arith.addf %{{.*}}, %[[HC]]
// CHECK:     %[[SNEW:.*]] = arith.truncf %[[HNEW]] : f32 to bf16
// CHECK:     scf.if
// CHECK:       memref.store %[[HNEW]], %[[H]][%[[ROW]], %[[COL]]]
// CHECK:       %[[SEXT:.*]] = arith.extf %[[SNEW]] : bf16 to f32
// CHECK:       memref.store %[[SEXT]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x8xf32, #gpu.address_space<workgroup>>
// CHECK:       memref.store %[[SNEW]], %[[S]][%[[ROW]], %[[COL]]]
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

// An LSTM-like step in bf16 at H = 96 (4 gates): 8 lanes a unit (768
// threads) of 12 inputs each; their 48 weights do not fit in registers
// beside the block's other lanes, so they go to shared memory, the 4
// gates' bf16 weights of an input in one 8-byte word (one load a word).
// Past 264 rows (two blocks on each of 132 SMs) 4 lanes a unit, blocks of
// 384 threads.
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @packed_weights
// CHECK: arith.cmpi ule, %{{.*}}, %c264
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c768{{.*}}) dynamic_shared_memory_size %c74496_i32
// CHECK:   memref.view {{.*}}[%c73728][] {{.*}} to memref<2x96xf32, #gpu.address_space<workgroup>>
// CHECK:   %[[WORDS:.*]] = memref.view {{.*}} to memref<12x1x768xi64, #gpu.address_space<workgroup>>
// CHECK:   scf.for
// CHECK-COUNT-4: arith.bitcast %{{.*}} : bf16 to i16
// CHECK:     memref.store %{{.*}}, %[[WORDS]]
// CHECK:   scf.for
// CHECK-COUNT-12: memref.load %[[WORDS]]
// CHECK-NOT: memref.load %[[WORDS]]
// CHECK:     gpu.shuffle xor
// CHECK: } {rnn.persistent_launch}
// CHECK: arith.cmpi ule, %{{.*}}, %c1584
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c384{{.*}}) dynamic_shared_memory_size %c74496_i32
// CHECK-COUNT-24: memref.load %{{.*}} : memref<24x1x384xi64, #gpu.address_space<workgroup>>
// CHECK: } {rnn.persistent_launch}
func.func @packed_weights(%u: memref<384x96xbf16>, %s: memref<?x96xbf16>,
                          %h: memref<?x96xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x96xbf16>
  %p = memref.alloc(%batch) : memref<?x384xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p : memref<?x384xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x96xbf16>, memref<384x96xbf16>) outs(%p : memref<?x384xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g0 = memref.subview %p[0, 0] [%batch, 96] [1, 1] : memref<?x384xf32> to memref<?x96xf32, strided<[384, 1]>>
    %g1 = memref.subview %p[0, 96] [%batch, 96] [1, 1] : memref<?x384xf32> to memref<?x96xf32, strided<[384, 1], offset: 96>>
    %g2 = memref.subview %p[0, 192] [%batch, 96] [1, 1] : memref<?x384xf32> to memref<?x96xf32, strided<[384, 1], offset: 192>>
    %g3 = memref.subview %p[0, 288] [%batch, 96] [1, 1] : memref<?x384xf32> to memref<?x96xf32, strided<[384, 1], offset: 288>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %g1, %g2, %g3, %h : memref<?x96xf32, strided<[384, 1]>>, memref<?x96xf32, strided<[384, 1], offset: 96>>, memref<?x96xf32, strided<[384, 1], offset: 192>>, memref<?x96xf32, strided<[384, 1], offset: 288>>, memref<?x96xf32>)
        outs(%h, %s : memref<?x96xf32>, memref<?x96xbf16>) {
    ^bb0(%i: f32, %f: f32, %z: f32, %o: f32, %hh: f32, %o1: f32, %o2: bf16):
      %0 = arith.mulf %i, %z : f32
      %1 = arith.mulf %f, %hh : f32
      %2 = arith.addf %0, %1 : f32
      %3 = math.tanh %2 : f32
      %4 = arith.mulf %o, %3 : f32
      %5 = arith.truncf %4 : f32 to bf16
      linalg.yield %4, %5 : f32, bf16
    }
  }
  memref.dealloc %p : memref<?x384xf32>
  return
}

// -----

// A head's weights beyond one block (f32, H = 256: 256 KiB, and 1024
// threads cannot hold them in registers): the loop stays as it is. With
// clusters of up to 2 (sm_90), two blocks share the head, each holding 128
// units' weights in shared memory (8 lanes a unit of 32 inputs, 1024
// threads), all of h_{t-1} staged in each; a unit's first lane stores its
// new h into both blocks' staged vectors (mapa + st.async), whose bytes
// complete the target block's mbarrier of that half: a block waits for the
// whole vector on its mbarrier, not for the other blocks at a barrier.
// With clusters of up to 8, the cost model's shortest step is clusters of
// 4 (64 units a block, 16 lanes a unit of 16 inputs, the weights in
// registers) for the batches whose blocks all fit at once, then smaller
// blocks of the same clusters for larger batches: the plans of every
// cluster size compete, not only those of the smallest that fits.
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @too_large
// CHECK-NOT: gpu.launch
// CHECK: scf.for
// COST-LABEL: func.func @too_large
// COST: arith.cmpi ule, %{{.*}}, %c33
// COST: gpu.launch clusters({{.*}}) in ({{.*}} = %c4{{.*}}) blocks({{.*}}) threads({{.*}}) in ({{.*}} = %c1024{{.*}}) dynamic_shared_memory_size %c2064_i32
// The second plan's batches end where the clusters of 2 ended: 66.
// COST: arith.cmpi ule, %{{.*}}, %c66
// COST: gpu.launch clusters({{.*}}) in ({{.*}} = %c4{{.*}}) blocks({{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) dynamic_shared_memory_size %c2064_i32
// COST-NOT: gpu.launch
// COST: return
// CLUSTER-LABEL: func.func @too_large
// CLUSTER-SAME: %[[U:[a-z0-9]+]]: memref<256x256xf32>, %[[S:[a-z0-9]+]]: memref<?x256xf32>
// CLUSTER: call @rnn_cuda_persistent_enabled
// CLUSTER: %[[B:.*]] = memref.dim %[[S]], %{{.*}} : memref<?x256xf32>
// CLUSTER: scf.if
// CLUSTER:   %[[BLOCKS:.*]] = arith.muli %[[B]], %c2
// CLUSTER:   gpu.launch clusters({{.*}}) in ({{.*}} = %c2{{.*}}) blocks(%[[BX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c1024{{.*}}) dynamic_shared_memory_size %c133136_i32
// CLUSTER:     %[[RANK:.*]] = arith.remui %[[BX]], %c2
// CLUSTER:     %[[CLUSTER:.*]] = arith.divui %[[BX]], %c2
// CLUSTER:     %[[ROW:.*]] = arith.divui %[[CLUSTER]], %c1
// CLUSTER:     %[[LOCAL:.*]] = arith.divui %[[TX]], %c8
// CLUSTER:     %[[FIRST_UNIT:.*]] = arith.muli %[[RANK]], %c128
// CLUSTER:     %[[UNIT:.*]] = arith.addi %[[FIRST_UNIT]], %[[LOCAL]]
// CLUSTER:     %[[STAGED:.*]] = memref.view
// CLUSTER:     memref.extract_aligned_pointer_as_index %[[STAGED]]
// The block's 128 units' weights into shared memory, rows of U from
// 128 * rank on.
// CLUSTER:     scf.for
// CLUSTER:       arith.muli %[[RANK]], %c128
// CLUSTER:       memref.load %[[U]]
// CLUSTER-NOT: memref.load %[[U]]
// The block stages all of h_0 itself.
// CLUSTER:     gpu.barrier
// CLUSTER:     scf.for %[[K:.*]] = %[[TX]] to %c256{{.*}} step %c1024{{.*}} {
// CLUSTER:       memref.load %[[S]][%[[ROW]], %{{.*}}]
// CLUSTER:       memref.store %{{.*}}, %[[STAGED]]
// Two mbarriers (one per half of the staged vector), then the only cluster
// barrier: every block has zeroed, staged h_0 and initialised them.
// CLUSTER:     scf.if
// CLUSTER-COUNT-2: nvvm.mbarrier.init
// CLUSTER:       nvvm.fence.mbarrier.init
// CLUSTER:     nvvm.cluster.arrive {aligned}
// CLUSTER:     nvvm.cluster.wait {aligned}
// CLUSTER:     scf.for %[[STEP:.*]] = {{.*}} iter_args
// Thread 0 expects the next half's 1024 bytes (not on the last step), and
// every thread waits for this step's half from the second step on.
// CLUSTER:       scf.if
// CLUSTER:         nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c1024_i32
// CLUSTER:       arith.cmpi uge, %[[STEP]]
// CLUSTER:       scf.if
// CLUSTER:         nvvm.mbarrier.try_wait.parity
// CLUSTER-COUNT-32: math.fma
// The block's reads of the staged vector end before anyone writes it again.
// CLUSTER:       gpu.barrier
// CLUSTER:       math.tanh
// The unit's first lane, but on the last step: its new h into both blocks'
// staged vectors, each store counted by the target block's mbarrier.
// CLUSTER:         scf.if
// CLUSTER:           %[[H:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CLUSTER:           %[[BAR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CLUSTER:           nvvm.mapa %[[H]], %c0_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER:           nvvm.mapa %[[BAR]], %c0_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER:           llvm.inline_asm has_side_effects "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [$0], $1, [$2];"
// CLUSTER:           nvvm.mapa %[[H]], %c1_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER:           nvvm.mapa %[[BAR]], %c1_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER:           llvm.inline_asm has_side_effects "st.async
// CLUSTER:         memref.store %{{.*}}, %[[S]]
// No barrier at the end of the step: the next one waits on its mbarrier.
// CLUSTER-NOT:   gpu.barrier
// CLUSTER-NOT:   nvvm.cluster
// CLUSTER:     gpu.terminator
// The step loop stays for larger batches.
// CLUSTER:   scf.for
func.func @too_large(%x: memref<?x?x256xf32>, %u: memref<256x256xf32>,
                     %s: memref<?x256xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %s, %c0 : memref<?x256xf32>
  %xp = memref.alloc(%steps, %batch) : memref<?x?x256xf32>
  linalg.copy ins(%x : memref<?x?x256xf32>) outs(%xp : memref<?x?x256xf32>)
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
  memref.dealloc %xp : memref<?x?x256xf32>
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

// -----

// A cell whose state is its own product rounded to bf16: the group reads
// nothing that lives across steps (no carried input, no prefetched
// projection, no invariant), so the kernel's step loop has no iter_args and
// its branch no results: each keeps exactly one terminator.
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @nothing_live
// CHECK: gpu.launch
// CHECK: scf.for %{{[^ ]*}} = %{{[^ ]*}} to %{{[^ ]*}} step %{{[^ ]*}} {
// CHECK: math.fma
// CHECK: scf.if
// CHECK: arith.truncf
// CHECK: } else {
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
func.func @nothing_live(%xs: memref<?x?x16xbf16>, %u: memref<16x16xbf16>,
                        %ys: memref<?x?x16xbf16>, %s: memref<?x16xbf16>,
                        %steps: index) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %s, %c0 : memref<?x16xbf16>
  %p = memref.alloc(%batch) {alignment = 64 : i64} : memref<?x16xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p : memref<?x16xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x16xbf16>, memref<16x16xbf16>) outs(%p : memref<?x16xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 16] [1, 1, 1] : memref<?x?x16xbf16> to memref<?x16xbf16, strided<[16, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p : memref<?x16xf32>) outs(%s, %y : memref<?x16xbf16>, memref<?x16xbf16, strided<[16, 1], offset: ?>>) {
    ^bb0(%in: f32, %o: bf16, %o2: bf16):
      %0 = arith.truncf %in : f32 to bf16
      linalg.yield %0, %0 : bf16, bf16
    }
  }
  memref.dealloc %p : memref<?x16xf32>
  return
}
