// RUN: rnn-opt %s --convert-step-loops-to-persistent-kernels --split-input-file | FileCheck %s

// A GRU-shaped step (3 gates of H = 2048, bf16 state and weight): the loop
// becomes one cluster launch of H / 16 blocks that calls the device library
// around the cell's pointwise body, with the loop kept as its fallback.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gru_like
// CHECK-SAME: %[[XP:[a-z0-9]+]]: memref<?x?x6144xf32>, %[[U:[a-z0-9]+]]: memref<6144x2048xbf16>, %[[BIAS:[a-z0-9]+]]: memref<6144xf32>, %[[H:[a-z0-9]+]]: memref<?x2048xf32>, %[[YS:[a-z0-9]+]]: memref<?x?x2048xf32>, %[[S:[a-z0-9]+]]: memref<?x2048xbf16>, %[[T:[a-z0-9]+]]: index)
// The batch in tiles, each run by its own copy of the H / 16 blocks: as many
// tiles as the runtime says the GPU holds, at most one per 8 rows, the rows
// evened out in multiples of 8; a tile takes at most the layout's 32 rows,
// and the sequence at least 32 steps (the kernel's set-up repaid).
// CHECK: memref.alloc(%{{.*}}) : memref<?x6144xf32>
// CHECK: %[[B:.*]] = memref.dim %[[S]], %{{.*}} : memref<?x2048xbf16>
// CHECK: %[[LIMIT:.*]] = call @rnn_cuda_persistent_batch_tiles(%c128_i32) : (i32) -> i32
// CHECK: %[[LIMITX:.*]] = arith.index_cast %[[LIMIT]]
// CHECK: %[[PER8:.*]] = arith.ceildivui %[[B]], %c8
// CHECK: %[[FEWER:.*]] = arith.minui %[[LIMITX]], %[[PER8]]
// CHECK: %[[WANTED:.*]] = arith.maxui %[[FEWER]], %c1
// CHECK: %[[EVEN:.*]] = arith.ceildivui %[[B]], %[[WANTED]]
// CHECK: %[[EIGHTS:.*]] = arith.ceildivui %[[EVEN]], %c8
// CHECK: %[[ROUND:.*]] = arith.muli %[[EIGHTS]], %c8
// CHECK: %[[ROWS:.*]] = arith.maxui %[[ROUND]], %c8
// CHECK: arith.cmpi ugt, %[[B]], %c0
// CHECK: arith.cmpi ule, %[[ROWS]], %c32
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[B]], %[[ROWS]]
// CHECK: arith.cmpi sge, %[[T]], %c32
// CHECK: %[[RAN:.*]] = scf.if %{{.*}} -> (i1) {
// The staged vector's rows are the library's padded row apart (H + 8), so
// that a block's rows of a batch tile are one bulk copy; a step counter per
// tile.
// CHECK:   %[[HBUF:.*]] = memref.alloc(%[[B]]) : memref<2x?x2056xbf16>
// CHECK:   %[[COUNTER:.*]] = memref.alloc(%[[TILES]]) : memref<?xi32>
// CHECK:   linalg.fill ins(%{{.*}} : i32) outs(%[[COUNTER]] : memref<?xi32>)
// No low-latency buffer: at H = 2048 a lane has no registers for its words.
// CHECK-NOT: rnn_cuda_persistent_low_latency
// CHECK:   %[[FIRST:.*]] = memref.subview %[[HBUF]][%{{.*}}, 0, 0] [1, %[[B]], 2048] [1, 1, 1] {{.*}} to memref<?x2048xbf16, strided<[2056, 1], offset: ?>>
// CHECK:   memref.copy %[[S]], %[[FIRST]]
// CHECK:   func.call @rnn_cuda_require_resident_next_launch()
// CHECK:   gpu.launch clusters({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) blocks(%[[BX:[a-z0-9]+]], %[[BY:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c128{{.*}}, {{.*}} = %[[TILES]], {{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in ({{.*}} = %c384{{.*}}) dynamic_shared_memory_size %c156672_i32
// The block's tile: its first row and its rows.
// CHECK:     %[[ROW0:.*]] = arith.muli %[[BY]], %[[ROWS]]
// CHECK:     %[[LEFT:.*]] = arith.subi %[[B]], %[[ROW0]]
// CHECK:     %[[TB:.*]] = arith.minui %[[ROWS]], %[[LEFT]]
// CHECK:     %[[FRAGMENTS:.*]] = llvm.alloca %{{.*}} x i32
// CHECK:     func.call @rnn_persistent_fwd_g3_h2048_begin(%{{.*}}, %[[FRAGMENTS]], %c2048_i32)
// CHECK:     %[[BY64:.*]] = arith.index_cast %[[BY]] : index to i64
// CHECK:     %[[MYCOUNTER:.*]] = llvm.getelementptr %{{.*}}[%[[BY64]]] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK:     %[[B32:.*]] = arith.index_cast %[[TB]] : index to i32
// CHECK:     scf.for %[[STEP:.*]] = %{{.*}} to %[[T]]
// h_{t-1} is the tile's rows of half (t % 2) of the buffer: B rows of 2056
// values each.
// CHECK:       %[[PARITY:.*]] = arith.remui %[[STEP]], %c2
// No low-latency buffer (see above): null for this step's half and the
// next's.
// CHECK:       %[[NOEXCHANGE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:       %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:       %[[HALF:.*]] = arith.muli %[[PARITY]], %[[B]]
// CHECK:       %[[AT:.*]] = arith.addi %[[HALF]], %[[ROW0]]
// CHECK:       %[[ATE:.*]] = arith.muli %[[AT]], %c2056
// CHECK:       %[[ATE64:.*]] = arith.index_cast %[[ATE]] : index to i64
// CHECK:       %[[PREVIOUS:.*]] = llvm.getelementptr %{{.*}}[%[[ATE64]]]
// The library's wait and the start of the staging, then what the step reads
// besides the product (its projection row, rebuilt from the step index, and
// the f32 state the group carries through memory; not the bias, the same
// every step, at H = 2048, where the layout leaves no registers for its
// address) into L1 after the wait (whose acquire empties L1), then the
// product.
// CHECK:       %[[ROW:.*]] = memref.subview %[[XP]][%[[STEP]], 0, 0]
// CHECK:       %[[S32:.*]] = arith.index_cast %[[STEP]] : index to i32
// CHECK:       func.call @rnn_persistent_fwd_g3_h2048_stage(%[[S32]], %[[B32]], %[[PREVIOUS]], %[[MYCOUNTER]], %[[NOEXCHANGE]])
// CHECK:       %[[TE:.*]] = arith.muli %[[TB]], %c16
// CHECK:       scf.for %{{.*}} = %[[TX]] to %[[TE]] step %c384
// CHECK:         memref.extract_strided_metadata %{{.*}} : memref<?x2048xf32, strided<[6144, 1], offset: ?>>
// CHECK:         func.call @rnn_persistent_prefetch_l1(
// CHECK-NOT:     memref.extract_strided_metadata %{{.*}} : memref<2048xf32, strided<[1], offset: 4096>>
// CHECK:         memref.extract_strided_metadata %[[H]]
// CHECK:         func.call @rnn_persistent_prefetch_l1(
// CHECK-NOT:     func.call @rnn_persistent_prefetch_l1(
// CHECK:       func.call @rnn_persistent_fwd_g3_h2048_multiply(%[[S32]], %[[B32]], %[[FRAGMENTS]], %c0_i32{{.*}}, %c3_i32{{.*}})
// CHECK:       scf.for %[[E:.*]] = %[[TX]] to %{{.*}} step %c384
// CHECK:         %[[UNIT:.*]] = arith.remui %[[E]], %c16
// CHECK:         %[[LOCAL:.*]] = arith.divui %[[E]], %c16
// CHECK:         %[[J:.*]] = arith.addi %{{.*}}, %[[UNIT]]
// CHECK:         %[[R:.*]] = arith.addi %[[ROW0]], %[[LOCAL]]
// CHECK-DAG:     memref.load %{{.*}}[%[[R]], %[[J]]] : memref<?x2048xf32, strided<[6144, 1], offset: ?>>
// CHECK-DAG:     memref.load %[[H]][%[[R]], %[[J]]] : memref<?x2048xf32>
// CHECK-DAG:     memref.load %{{.*}}[%[[J]]] : memref<2048xf32, strided<[1], offset: 4096>>
// The library's sums are by the row in the tile.
// CHECK-DAG:     %[[LOCAL32:.*]] = arith.index_cast %[[LOCAL]] : index to i32
// CHECK-DAG:     func.call @rnn_persistent_fwd_g3_h2048_sum(%{{.*}}, %[[LOCAL32]], %{{.*}}) : (i32, i32, i32) -> f32
// The cell's f32 tanh by the library's approximation.
// CHECK-NOT:     math.tanh
// CHECK:         func.call @rnn_persistent_tanh(%{{.*}}) : (f32) -> f32
// The new state goes to the other half of the double buffer.
// CHECK:         memref.store %[[NEW:.*]], %[[HBUF]][%{{.*}}, %[[R]], %[[J]]] : memref<2x?x2056xbf16>
// ... and to the library (for the low-latency exchange, which a null
// buffer turns off), by the row in the tile and the unit.
// CHECK:         %[[NEW32:.*]] = arith.extf %[[NEW]] : bf16 to f32
// CHECK:         func.call @rnn_persistent_fwd_g3_h2048_publish(%[[NEW32]], %{{.*}}, %{{.*}}, %[[B32]], %[[NONE]])
// CHECK:         memref.store %{{.*}}, %{{.*}}[%[[R]], %[[J]]] : memref<?x2048xf32, strided<[2048, 1], offset: ?>>
// CHECK:       func.call @rnn_persistent_fwd_g3_h2048_release(%[[MYCOUNTER]], %[[NONE]], %[[B32]], %{{.*}})
// CHECK:   %[[REFUSED:.*]] = func.call @rnn_cuda_take_refused_launch() : () -> i32
// S is not the loop's own scratch (here an argument the caller reads): its
// last value comes back from the buffer.
// CHECK:   scf.if
// CHECK:     memref.copy %{{.*}}, %[[S]]
// CHECK:   memref.dealloc %[[HBUF]]
// CHECK:   memref.dealloc %[[COUNTER]]
// CHECK: } else {
// CHECK:   scf.yield %false
// CHECK: %[[NOT:.*]] = arith.xori %[[RAN]], %true
// CHECK: scf.if %[[NOT]] {
// CHECK:   scf.for
// CHECK:     linalg.fill
// CHECK:     linalg.generic {{.*}} attrs = {rnn.gemm_weight_layout = 0 : i32}
// CHECK: call @use(%[[S]])
func.func @gru_like(%xp: memref<?x?x6144xf32>, %u: memref<6144x2048xbf16>,
                    %bias: memref<6144xf32>, %h: memref<?x2048xf32>,
                    %ys: memref<?x?x2048xf32>, %s: memref<?x2048xbf16>,
                    %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x2048xbf16>
  %p = memref.alloc(%batch) : memref<?x6144xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 6144] [1, 1, 1] : memref<?x?x6144xf32> to memref<?x6144xf32, strided<[6144, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%p : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %x0 = memref.subview %x[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32, strided<[6144, 1], offset: ?>> to memref<?x2048xf32, strided<[6144, 1], offset: ?>>
    %b2 = memref.subview %bias[4096] [2048] [1] : memref<6144xf32> to memref<2048xf32, strided<[1], offset: 4096>>
    %g0 = memref.subview %p[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    %g2 = memref.subview %p[0, 4096] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1], offset: 4096>>
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 2048] [1, 1, 1] : memref<?x?x2048xf32> to memref<?x2048xf32, strided<[2048, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x0, %b2, %g0, %g2, %h : memref<?x2048xf32, strided<[6144, 1], offset: ?>>, memref<2048xf32, strided<[1], offset: 4096>>, memref<?x2048xf32, strided<[6144, 1]>>, memref<?x2048xf32, strided<[6144, 1], offset: 4096>>, memref<?x2048xf32>)
        outs(%h, %s, %y : memref<?x2048xf32>, memref<?x2048xbf16>, memref<?x2048xf32, strided<[2048, 1], offset: ?>>) {
    ^bb0(%xv: f32, %bv: f32, %a: f32, %n: f32, %hv: f32, %o0: f32, %o1: bf16, %o2: f32):
      %0 = arith.addf %xv, %a : f32
      %1 = arith.addf %n, %bv : f32
      %2 = arith.mulf %0, %1 : f32
      %3 = math.tanh %2 : f32
      %4 = arith.addf %3, %hv : f32
      %5 = arith.truncf %4 : f32 to bf16
      linalg.yield %4, %5, %4 : f32, bf16, f32
    }
  }
  memref.dealloc %p : memref<?x6144xf32>
  call @use(%s) : (memref<?x2048xbf16>) -> ()
  return
}
func.func private @use(memref<?x2048xbf16>)

// -----

// An LSTM-shaped step: four gates, the product accumulating onto the step's
// projection row (no fill), which the kernel adds to the library's sums.
// S is scratch of the loop's own, only freed after it: nothing is copied
// back.
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @lstm_like
// CHECK-SAME: %[[C:[a-z0-9]+]]: memref<?x2048xf32>
// CHECK: gpu.launch clusters({{.*}}) dynamic_shared_memory_size %c230656_i32
// CHECK:   func.call @rnn_persistent_fwd_g4_h2048_begin
// CHECK:   scf.for %[[STEP:.*]] =
// CHECK:     %[[ROW:.*]] = memref.subview %{{.*}}[%[[STEP]], 0, 0] [1, %{{.*}}, 8192]
// CHECK:     %[[GATE0:.*]] = memref.subview %[[ROW]][0, 0] [%{{.*}}, 2048]
// CHECK:     %[[GATE3:.*]] = memref.subview %[[ROW]][0, 6144] [%{{.*}}, 2048]
// The projection's gate rows are prefetched after the wait, and the cell
// state.
// CHECK:     func.call @rnn_persistent_fwd_g4_h2048_stage
// CHECK-COUNT-2: func.call @rnn_persistent_prefetch_l1(
// CHECK: memref.extract_strided_metadata %[[C]]
// CHECK: func.call @rnn_persistent_prefetch_l1(
// CHECK-NOT: func.call @rnn_persistent_prefetch_l1(
// CHECK:     func.call @rnn_persistent_fwd_g4_h2048_multiply
// CHECK:     scf.for
// CHECK:       memref.load %[[GATE0]]
// CHECK:       %[[SUM:.*]] = func.call @rnn_persistent_fwd_g4_h2048_sum
// CHECK-NEXT:  %[[PROJ:.*]] = memref.load %[[GATE3]]
// CHECK-NEXT:  arith.addf %[[PROJ]], %[[SUM]]
// CHECK:   func.call @rnn_cuda_take_refused_launch
// CHECK-NOT: memref.copy
// CHECK: scf.yield
// CHECK: scf.if
// CHECK:   scf.for
// CHECK: memref.dealloc %{{.*}} : memref<?x2048xbf16>
func.func @lstm_like(%xs: memref<?x?x8192xf32>, %u: memref<8192x2048xbf16>,
                     %c: memref<?x2048xf32>, %s0: memref<?x2048xbf16>,
                     %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %s0, %c0 : memref<?x2048xbf16>
  %xp = memref.alloc(%steps, %batch) : memref<?x?x8192xf32>
  memref.copy %xs, %xp : memref<?x?x8192xf32> to memref<?x?x8192xf32>
  %s = memref.alloc(%batch) : memref<?x2048xbf16>
  memref.copy %s0, %s : memref<?x2048xbf16> to memref<?x2048xbf16>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 8192] [1, 1, 1] : memref<?x?x8192xf32> to memref<?x8192xf32, strided<[8192, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x2048xbf16>, memref<8192x2048xbf16>) outs(%x : memref<?x8192xf32, strided<[8192, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g0 = memref.subview %x[0, 0] [%batch, 2048] [1, 1] : memref<?x8192xf32, strided<[8192, 1], offset: ?>> to memref<?x2048xf32, strided<[8192, 1], offset: ?>>
    %g3 = memref.subview %x[0, 6144] [%batch, 2048] [1, 1] : memref<?x8192xf32, strided<[8192, 1], offset: ?>> to memref<?x2048xf32, strided<[8192, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %g3, %c : memref<?x2048xf32, strided<[8192, 1], offset: ?>>, memref<?x2048xf32, strided<[8192, 1], offset: ?>>, memref<?x2048xf32>)
        outs(%c, %s : memref<?x2048xf32>, memref<?x2048xbf16>) {
    ^bb0(%i: f32, %o: f32, %cv: f32, %co: f32, %so: bf16):
      %0 = arith.mulf %i, %cv : f32
      %1 = math.tanh %0 : f32
      %2 = arith.mulf %o, %1 : f32
      %3 = arith.truncf %2 : f32 to bf16
      linalg.yield %0, %3 : f32, bf16
    }
  }
  memref.dealloc %s : memref<?x2048xbf16>
  memref.dealloc %xp : memref<?x?x8192xf32>
  return
}

// -----

// Left alone: a hidden size without library entry points (H = 400: padded to 448, below
// the smallest layout, 512), an f32 product that does not allow TF32, and
// a step with anything else in it (here a copy).
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @not_eligible
// CHECK-NOT: gpu.launch
// CHECK-NOT: rnn_persistent
// CHECK: return
func.func @not_eligible(%u1: memref<1200x400xbf16>, %s1: memref<?x400xbf16>,
                        %u2: memref<6144x2048xf32>, %s2: memref<?x2048xf32>, %p2: memref<?x6144xf32>,
                        %u3: memref<6144x2048xbf16>, %s3: memref<?x2048xbf16>, %p3: memref<?x6144xf32>,
                        %other: memref<?x2048xbf16>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b1 = memref.dim %s1, %c0 : memref<?x400xbf16>
  // The loop's own scratch: only its hidden size keeps it a loop.
  %p1 = memref.alloc(%b1) : memref<?x1200xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p1 : memref<?x1200xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s1, %u1 : memref<?x400xbf16>, memref<1200x400xbf16>) outs(%p1 : memref<?x1200xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p1[0, 0] [%b1, 400] [1, 1] : memref<?x1200xf32> to memref<?x400xf32, strided<[1200, 1]>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g : memref<?x400xf32, strided<[1200, 1]>>) outs(%s1 : memref<?x400xbf16>) {
    ^bb0(%v: f32, %o: bf16):
      %0 = arith.truncf %v : f32 to bf16
      linalg.yield %0 : bf16
    }
  }
  memref.dealloc %p1 : memref<?x1200xf32>
  %b2 = memref.dim %s2, %c0 : memref<?x2048xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p2 : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s2, %u2 : memref<?x2048xf32>, memref<6144x2048xf32>) outs(%p2 : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %2 = arith.mulf %in, %w : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p2[0, 0] [%b2, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g : memref<?x2048xf32, strided<[6144, 1]>>) outs(%s2 : memref<?x2048xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
    }
  }
  %b3 = memref.dim %s3, %c0 : memref<?x2048xbf16>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p3 : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s3, %u3 : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p3 : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p3[0, 0] [%b3, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g : memref<?x2048xf32, strided<[6144, 1]>>) outs(%s3 : memref<?x2048xbf16>) {
    ^bb0(%v: f32, %o: bf16):
      %0 = arith.truncf %v : f32 to bf16
      linalg.yield %0 : bf16
    }
    memref.copy %s3, %other : memref<?x2048xbf16> to memref<?x2048xbf16>
  }
  return
}

// -----

// Left alone: the product's buffer read after the loop (the kernel never
// stores it), an output written through a broadcast map (every row's thread
// would store the same element), and an input that reads a buffer the group
// writes one column over (another thread's element), and a "matmul" marked
// as one whose body subtracts.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @product_read_after
// CHECK-NOT: gpu.launch
// CHECK-LABEL: func.func @output_broadcast
// CHECK-NOT: gpu.launch
// CHECK-LABEL: func.func @reads_neighbour
// CHECK-NOT: gpu.launch
// CHECK-LABEL: func.func @not_a_product
// CHECK-NOT: gpu.launch
// CHECK: return
func.func private @use_product(memref<?x6144xf32>)
func.func @product_read_after(%u: memref<6144x2048xbf16>, %s: memref<?x2048xbf16>,
    %h: memref<?x2048xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x2048xbf16>
  %p = memref.alloc(%batch) : memref<?x6144xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g, %h : memref<?x2048xf32, strided<[6144, 1]>>, memref<?x2048xf32>) outs(%h, %s : memref<?x2048xf32>, memref<?x2048xbf16>) {
    ^bb0(%v: f32, %hv: f32, %o: f32, %o2: bf16):
      %0 = arith.addf %v, %hv : f32
      %1 = arith.truncf %0 : f32 to bf16
      linalg.yield %0, %1 : f32, bf16
    }
  }
  call @use_product(%p) : (memref<?x6144xf32>) -> ()
  memref.dealloc %p : memref<?x6144xf32>
  return
}
func.func @output_broadcast(%u: memref<6144x2048xbf16>, %s: memref<?x2048xbf16>,
    %h: memref<?x2048xf32>, %last: memref<2048xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x2048xbf16>
  %p = memref.alloc(%batch) : memref<?x6144xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    linalg.generic {indexing_maps = [#id, #id, #col], iterator_types = ["parallel", "parallel"]}
        ins(%g : memref<?x2048xf32, strided<[6144, 1]>>) outs(%s, %last : memref<?x2048xbf16>, memref<2048xf32>) {
    ^bb0(%v: f32, %o: bf16, %o2: f32):
      %1 = arith.truncf %v : f32 to bf16
      linalg.yield %1, %v : bf16, f32
    }
  }
  memref.dealloc %p : memref<?x6144xf32>
  return
}
func.func @reads_neighbour(%u: memref<6144x2048xbf16>, %s: memref<?x2048xbf16>,
    %h: memref<?x2048xf32>, %wide: memref<?x2049xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x2048xbf16>
  %p = memref.alloc(%batch) : memref<?x6144xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    %hs = memref.subview %wide[0, 1] [%batch, 2048] [1, 1] : memref<?x2049xf32> to memref<?x2048xf32, strided<[2049, 1], offset: 1>>
    %hw = memref.subview %wide[0, 0] [%batch, 2048] [1, 1] : memref<?x2049xf32> to memref<?x2048xf32, strided<[2049, 1]>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g, %hs : memref<?x2048xf32, strided<[6144, 1]>>, memref<?x2048xf32, strided<[2049, 1], offset: 1>>) outs(%hw, %s : memref<?x2048xf32, strided<[2049, 1]>>, memref<?x2048xbf16>) {
    ^bb0(%v: f32, %hv: f32, %o: f32, %o2: bf16):
      %0 = arith.addf %v, %hv : f32
      %1 = arith.truncf %0 : f32 to bf16
      linalg.yield %0, %1 : f32, bf16
    }
  }
  memref.dealloc %p : memref<?x6144xf32>
  return
}
func.func @not_a_product(%u: memref<6144x2048xbf16>, %s: memref<?x2048xbf16>,
    %h: memref<?x2048xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x2048xbf16>
  %p = memref.alloc(%batch) : memref<?x6144xf32>
  scf.for %t = %c0 to %steps step %c1 {
    linalg.fill ins(%zero : f32) outs(%p : memref<?x6144xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %u : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p : memref<?x6144xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: bf16, %w: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %w : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.subf %acc, %2 : f32
      linalg.yield %3 : f32
    }
    %g = memref.subview %p[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g, %h : memref<?x2048xf32, strided<[6144, 1]>>, memref<?x2048xf32>) outs(%h, %s : memref<?x2048xf32>, memref<?x2048xbf16>) {
    ^bb0(%v: f32, %hv: f32, %o: f32, %o2: bf16):
      %0 = arith.addf %v, %hv : f32
      %1 = arith.truncf %0 : f32 to bf16
      linalg.yield %0, %1 : f32, bf16
    }
  }
  memref.dealloc %p : memref<?x6144xf32>
  return
}

// -----

// Left alone: the same step loop run again by a loop around it (inside an
// scf.if), its product buffer allocated outside both: the kernel would
// start each run from what the last one left, so the buffer is not the
// time loop's own scratch.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @nested_in_loop
// CHECK-NOT: gpu.launch
// CHECK-NOT: rnn_persistent
// CHECK: return
func.func @nested_in_loop(%cond: i1, %xp: memref<?x?x6144xf32>, %u: memref<6144x2048xbf16>,
                    %bias: memref<6144xf32>, %h: memref<?x2048xf32>,
                    %ys: memref<?x?x2048xf32>, %s: memref<?x2048xbf16>,
                    %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = memref.dim %s, %c0 : memref<?x2048xbf16>
  %p = memref.alloc(%batch) : memref<?x6144xf32>
  %c2 = arith.constant 2 : index
  scf.if %cond {
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %t = %c0 to %steps step %c1 {
        %x = memref.subview %xp[%t, 0, 0] [1, %batch, 6144] [1, 1, 1] : memref<?x?x6144xf32> to memref<?x6144xf32, strided<[6144, 1], offset: ?>>
        linalg.fill ins(%zero : f32) outs(%p : memref<?x6144xf32>)
        linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
            ins(%s, %u : memref<?x2048xbf16>, memref<6144x2048xbf16>) outs(%p : memref<?x6144xf32>)
            attrs = {rnn.gemm_weight_layout = 0 : i32} {
        ^bb0(%in: bf16, %w: bf16, %acc: f32):
          %0 = arith.extf %in : bf16 to f32
          %1 = arith.extf %w : bf16 to f32
          %2 = arith.mulf %0, %1 : f32
          %3 = arith.addf %acc, %2 : f32
          linalg.yield %3 : f32
        }
        %x0 = memref.subview %x[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32, strided<[6144, 1], offset: ?>> to memref<?x2048xf32, strided<[6144, 1], offset: ?>>
        %b2 = memref.subview %bias[4096] [2048] [1] : memref<6144xf32> to memref<2048xf32, strided<[1], offset: 4096>>
        %g0 = memref.subview %p[0, 0] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1]>>
        %g2 = memref.subview %p[0, 4096] [%batch, 2048] [1, 1] : memref<?x6144xf32> to memref<?x2048xf32, strided<[6144, 1], offset: 4096>>
        %y = memref.subview %ys[%t, 0, 0] [1, %batch, 2048] [1, 1, 1] : memref<?x?x2048xf32> to memref<?x2048xf32, strided<[2048, 1], offset: ?>>
        linalg.generic {indexing_maps = [#id, #col, #id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
            ins(%x0, %b2, %g0, %g2, %h : memref<?x2048xf32, strided<[6144, 1], offset: ?>>, memref<2048xf32, strided<[1], offset: 4096>>, memref<?x2048xf32, strided<[6144, 1]>>, memref<?x2048xf32, strided<[6144, 1], offset: 4096>>, memref<?x2048xf32>)
            outs(%h, %s, %y : memref<?x2048xf32>, memref<?x2048xbf16>, memref<?x2048xf32, strided<[2048, 1], offset: ?>>) {
        ^bb0(%xv: f32, %bv: f32, %a: f32, %n: f32, %hv: f32, %o0: f32, %o1: bf16, %o2: f32):
          %0 = arith.addf %xv, %a : f32
          %1 = arith.addf %n, %bv : f32
          %2 = arith.mulf %0, %1 : f32
          %3 = math.tanh %2 : f32
          %4 = arith.addf %3, %hv : f32
          %5 = arith.truncf %4 : f32 to bf16
          linalg.yield %4, %5, %4 : f32, bf16, f32
        }
      }
    }
  }
  memref.dealloc %p : memref<?x6144xf32>
  return
}

// -----

// f32 products that allow TF32 run on the library's TF32 layouts: the
// LSTM-like step of four gates at H = 1024 as 128 blocks of 8 units (two
// 16-row tiles, 8 K slices: 512 threads), its staged vector f32 with rows of
// H + 8, the cell's tanh in IEEE form (no approximate tanh: the state the
// product reads is the f32 state itself).
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @tf32_four_gates
// CHECK: call @rnn_cuda_persistent_batch_tiles(%c128_i32)
// CHECK: %[[ROWS:.*]] = arith.maxui %{{.*}}, %c8
// CHECK: memref.alloc(%{{.*}}) : memref<2x?x1032xf32>
// The low-latency buffer (words of one f32 value and its step): B rows a
// half where the runtime allows it and no tile has more than 2 rows (4
// words a thread of 512, 1024 words a row; a tile's rows are the tile
// size, a multiple of 8, or all of a smaller batch), zeroed; else none.
// CHECK: %[[ALLOWED:.*]] = func.call @rnn_cuda_persistent_low_latency() : () -> i32
// CHECK: %[[ON:.*]] = arith.cmpi ne, %[[ALLOWED]], %{{.*}} : i32
// CHECK: %[[LARGEST:.*]] = arith.minui %[[ROWS]], %[[BATCH:.*]] : index
// CHECK: %[[SMALL:.*]] = arith.cmpi ule, %[[LARGEST]], %c2
// CHECK: %[[USED:.*]] = arith.andi %[[ON]], %[[SMALL]]
// CHECK: %[[USED32:.*]] = arith.extui %[[USED]] : i1 to i32
// CHECK: %[[XROWS:.*]] = arith.select %[[USED]], %{{.*}}, %c0
// CHECK: %[[EXCHANGE:.*]] = memref.alloc(%[[XROWS]]) : memref<2x?x1024xi64>
// CHECK: scf.if %[[USED]] {
// CHECK:   linalg.fill ins(%{{.*}} : i64) outs(%[[EXCHANGE]] : memref<2x?x1024xi64>)
// CHECK: gpu.launch clusters({{.*}}) blocks({{.*}}) in ({{.*}} = %c128{{.*}}) threads({{.*}}) in ({{.*}} = %c512
// CHECK:   func.call @rnn_persistent_fwd_tf32_g4_h1024_begin
// CHECK:   %[[EXBASE:.*]] = memref.extract_aligned_pointer_as_index %[[EXCHANGE]]
// CHECK:   %[[EXCHANGING:.*]] = arith.cmpi ne, %[[USED32]], %{{.*}} : i32
// CHECK:   scf.for
// The tile's rows of this step's half and of the next's, or null where the
// tiles do not use the buffer, once a step.
// CHECK:     arith.muli %{{.*}}, %c1024
// CHECK:     %[[EXIN:.*]] = arith.select %[[EXCHANGING]], %{{.*}}, %{{.*}} : !llvm.ptr
// CHECK:     arith.muli %{{.*}}, %c1024
// CHECK:     %[[EXOUT:.*]] = arith.select %[[EXCHANGING]], %{{.*}}, %{{.*}} : !llvm.ptr
// CHECK:     func.call @rnn_persistent_fwd_tf32_g4_h1024_stage(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[EXIN]])
// CHECK:     func.call @rnn_persistent_fwd_tf32_g4_h1024_multiply
// The block's elements: its 8 units of each batch row.
// CHECK:     scf.for
// CHECK:       arith.remui %{{.*}}, %c8
// CHECK:       func.call @rnn_persistent_fwd_tf32_g4_h1024_sum
// CHECK-NOT:   rnn_persistent_tanh
// CHECK:       math.tanh
// CHECK:       func.call @rnn_persistent_fwd_tf32_g4_h1024_publish(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[EXOUT]])
// CHECK:     func.call @rnn_persistent_fwd_tf32_g4_h1024_release(%{{.*}}, %[[EXOUT]], %{{.*}}, %{{.*}})
// CHECK: memref.dealloc %[[EXCHANGE]]
func.func @tf32_four_gates(%xs: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>,
                  %ys: memref<?x?x1024xf32>, %h: memref<?x1024xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %h, %c0 : memref<?x1024xf32>
  %xp = memref.alloc(%steps, %batch) : memref<?x?x4096xf32>
  memref.copy %xs, %xp : memref<?x?x4096xf32> to memref<?x?x4096xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<4096x1024xf32>) outs(%x : memref<?x4096xf32, strided<[4096, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32, rnn.gemm_allow_tf32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    %g0 = memref.subview %x[0, 0] [%batch, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    %gl = memref.subview %x[0, 3072] [%batch, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %gl, %h : memref<?x1024xf32, strided<[4096, 1], offset: ?>>, memref<?x1024xf32, strided<[4096, 1], offset: ?>>, memref<?x1024xf32>)
        outs(%h, %y : memref<?x1024xf32>, memref<?x1024xf32, strided<[1024, 1], offset: ?>>) {
    ^bb0(%a: f32, %n: f32, %hv: f32, %o0: f32, %o1: f32):
      %0 = arith.mulf %a, %n : f32
      %1 = math.tanh %0 : f32
      %2 = arith.addf %1, %hv : f32
      linalg.yield %2, %2 : f32, f32
    }
  }
  memref.dealloc %xp : memref<?x?x4096xf32>
  return
}

// The vanilla RNN's one gate at H = 2048: 16 units a block (one tile),
// 128 blocks of 256 threads.
// CHECK-LABEL: func.func @tf32_one_gate
// CHECK: memref.alloc(%{{.*}}) : memref<2x?x2056xf32>
// CHECK: gpu.launch clusters({{.*}}) blocks({{.*}}) in ({{.*}} = %c128{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK:   func.call @rnn_persistent_fwd_tf32_g1_h2048_begin
// CHECK:       arith.remui %{{.*}}, %c16
func.func @tf32_one_gate(%xs: memref<?x?x2048xf32>, %u: memref<2048x2048xf32>,
                  %ys: memref<?x?x2048xf32>, %h: memref<?x2048xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %h, %c0 : memref<?x2048xf32>
  %xp = memref.alloc(%steps, %batch) : memref<?x?x2048xf32>
  memref.copy %xs, %xp : memref<?x?x2048xf32> to memref<?x?x2048xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 2048] [1, 1, 1] : memref<?x?x2048xf32> to memref<?x2048xf32, strided<[2048, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x2048xf32>, memref<2048x2048xf32>) outs(%x : memref<?x2048xf32, strided<[2048, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32, rnn.gemm_allow_tf32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    %g0 = memref.subview %x[0, 0] [%batch, 2048] [1, 1] : memref<?x2048xf32, strided<[2048, 1], offset: ?>> to memref<?x2048xf32, strided<[2048, 1], offset: ?>>
    %gl = memref.subview %x[0, 0] [%batch, 2048] [1, 1] : memref<?x2048xf32, strided<[2048, 1], offset: ?>> to memref<?x2048xf32, strided<[2048, 1], offset: ?>>
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 2048] [1, 1, 1] : memref<?x?x2048xf32> to memref<?x2048xf32, strided<[2048, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %gl, %h : memref<?x2048xf32, strided<[2048, 1], offset: ?>>, memref<?x2048xf32, strided<[2048, 1], offset: ?>>, memref<?x2048xf32>)
        outs(%h, %y : memref<?x2048xf32>, memref<?x2048xf32, strided<[2048, 1], offset: ?>>) {
    ^bb0(%a: f32, %n: f32, %hv: f32, %o0: f32, %o1: f32):
      %0 = arith.mulf %a, %n : f32
      %1 = math.tanh %0 : f32
      %2 = arith.addf %1, %hv : f32
      linalg.yield %2, %2 : f32, f32
    }
  }
  memref.dealloc %xp : memref<?x?x2048xf32>
  return
}

// Left alone: the same f32 step without TF32 (the library has no f32
// product of full precision), and four gates at H = 1088, whose 136 blocks
// of 8 units would not all fit on the GPU at once.
// CHECK-LABEL: func.func @f32_without_tf32
// CHECK-NOT: gpu.launch
// CHECK-NOT: rnn_persistent
// CHECK: return
func.func @f32_without_tf32(%xs: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>,
                  %ys: memref<?x?x1024xf32>, %h: memref<?x1024xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %h, %c0 : memref<?x1024xf32>
  %xp = memref.alloc(%steps, %batch) : memref<?x?x4096xf32>
  memref.copy %xs, %xp : memref<?x?x4096xf32> to memref<?x?x4096xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<4096x1024xf32>) outs(%x : memref<?x4096xf32, strided<[4096, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    %g0 = memref.subview %x[0, 0] [%batch, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    %gl = memref.subview %x[0, 3072] [%batch, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %gl, %h : memref<?x1024xf32, strided<[4096, 1], offset: ?>>, memref<?x1024xf32, strided<[4096, 1], offset: ?>>, memref<?x1024xf32>)
        outs(%h, %y : memref<?x1024xf32>, memref<?x1024xf32, strided<[1024, 1], offset: ?>>) {
    ^bb0(%a: f32, %n: f32, %hv: f32, %o0: f32, %o1: f32):
      %0 = arith.mulf %a, %n : f32
      %1 = math.tanh %0 : f32
      %2 = arith.addf %1, %hv : f32
      linalg.yield %2, %2 : f32, f32
    }
  }
  memref.dealloc %xp : memref<?x?x4096xf32>
  return
}
// CHECK-LABEL: func.func @tf32_too_many_blocks
// CHECK-NOT: gpu.launch
// CHECK-NOT: rnn_persistent
// CHECK: return
func.func @tf32_too_many_blocks(%xs: memref<?x?x4352xf32>, %u: memref<4352x1088xf32>,
                  %ys: memref<?x?x1088xf32>, %h: memref<?x1088xf32>, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %batch = memref.dim %h, %c0 : memref<?x1088xf32>
  %xp = memref.alloc(%steps, %batch) : memref<?x?x4352xf32>
  memref.copy %xs, %xp : memref<?x?x4352xf32> to memref<?x?x4352xf32>
  scf.for %t = %c0 to %steps step %c1 {
    %x = memref.subview %xp[%t, 0, 0] [1, %batch, 4352] [1, 1, 1] : memref<?x?x4352xf32> to memref<?x4352xf32, strided<[4352, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1088xf32>, memref<4352x1088xf32>) outs(%x : memref<?x4352xf32, strided<[4352, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32, rnn.gemm_allow_tf32} {
    ^bb0(%in: f32, %w: f32, %acc: f32):
      %0 = arith.mulf %in, %w : f32
      %1 = arith.addf %acc, %0 : f32
      linalg.yield %1 : f32
    }
    %g0 = memref.subview %x[0, 0] [%batch, 1088] [1, 1] : memref<?x4352xf32, strided<[4352, 1], offset: ?>> to memref<?x1088xf32, strided<[4352, 1], offset: ?>>
    %gl = memref.subview %x[0, 3264] [%batch, 1088] [1, 1] : memref<?x4352xf32, strided<[4352, 1], offset: ?>> to memref<?x1088xf32, strided<[4352, 1], offset: ?>>
    %y = memref.subview %ys[%t, 0, 0] [1, %batch, 1088] [1, 1, 1] : memref<?x?x1088xf32> to memref<?x1088xf32, strided<[1088, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g0, %gl, %h : memref<?x1088xf32, strided<[4352, 1], offset: ?>>, memref<?x1088xf32, strided<[4352, 1], offset: ?>>, memref<?x1088xf32>)
        outs(%h, %y : memref<?x1088xf32>, memref<?x1088xf32, strided<[1088, 1], offset: ?>>) {
    ^bb0(%a: f32, %n: f32, %hv: f32, %o0: f32, %o1: f32):
      %0 = arith.mulf %a, %n : f32
      %1 = math.tanh %0 : f32
      %2 = arith.addf %1, %hv : f32
      linalg.yield %2, %2 : f32, f32
    }
  }
  memref.dealloc %xp : memref<?x?x4352xf32>
  return
}
