// RUN: rnn-opt %s -split-input-file --convert-matmul-to-library-gemm | FileCheck %s
// RUN: rnn-opt %s -split-input-file --convert-matmul-to-library-gemm='function=other_gemm' | FileCheck %s --check-prefix=NAMED

#in = affine_map<(t, b, n, k) -> (t, b, k)>
#w = affine_map<(t, b, n, k) -> (n, k)>
#out = affine_map<(t, b, n, k) -> (t, b, n)>

// A projection over a whole sequence: one GEMM with M = T * B, the weight
// [N, K] (layout 0), f32 everywhere (dtype code 0), leading dimensions from
// the buffers' strides.
// CHECK: func.func private @rnn_cpu_gemm(i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @sequence
// CHECK-NOT: linalg.generic
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[M:.*]] = arith.muli %{{.*}}, %[[T]]
// CHECK: %[[M2:.*]] = arith.muli %[[M]], %{{.*}}
// CHECK: %[[MI:.*]] = arith.index_cast %[[M2]] : index to i64
// CHECK: call @rnn_cpu_gemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[MI]],
// NAMED: call @other_gemm(
func.func @sequence(%x: memref<?x?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x?x8xf32>) {
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x?x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (k, n)>
#out = affine_map<(b, n, k) -> (b, n)>

// A row of a sequence (a strided view with unit inner stride) times a
// [K, N] weight in bf16 with an f32 result: layout 1, dtype codes 2 and 0.
// Nothing zero-fills the output first, so the contraction adds onto it:
// the accumulate flag 4 is set (1 + 4).
// CHECK-LABEL: func.func @strided_rows
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[KN:.*]] = arith.constant 5 : i32
// CHECK: call @rnn_cpu_gemm(%[[BF16]], %[[F32]], %[[KN]],
func.func @strided_rows(%x: memref<?x3xbf16, strided<[3, 1], offset: ?>>, %w: memref<3x8xbf16>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xbf16, strided<[3, 1], offset: ?>>, memref<3x8xbf16>) outs(%y : memref<?x8xf32>)
      attrs = {rnn.gemm_weight_layout = 1 : i32} {
  ^bb0(%a: bf16, %b: bf16, %c: f32):
    %ae = arith.extf %a : bf16 to f32
    %be = arith.extf %b : bf16 to f32
    %p = arith.mulf %ae, %be : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// Rows that are not contiguous (a column stride of 2), and a contraction
// without the marker, stay as they are: they lower to loops.
// CHECK-LABEL: func.func @not_a_matrix
// CHECK-NOT: call @rnn_cpu_gemm
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @not_a_matrix(%x: memref<4x3xf32, strided<[6, 2]>>, %w: memref<8x3xf32>, %y: memref<4x8xf32>, %x2: memref<4x3xf32>) {
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x3xf32, strided<[6, 2]>>, memref<8x3xf32>) outs(%y : memref<4x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x2, %w : memref<4x3xf32>, memref<8x3xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// The zero-fill the contraction accumulated onto is dead once the GEMM
// overwrites the buffer; a fill with a write in between is not.
// CHECK-LABEL: func.func @dead_fill
// CHECK-NOT: linalg.fill
// CHECK: call @rnn_cpu_gemm
// CHECK-LABEL: func.func @live_fill
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: call @rnn_cpu_gemm
func.func @dead_fill(%x: memref<4x3xf32>, %w: memref<8x3xf32>, %y: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x3xf32>, memref<8x3xf32>) outs(%y : memref<4x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @live_fill(%x: memref<4x3xf32>, %w: memref<8x3xf32>, %y: memref<4x8xf32>, %v: f32) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%y : memref<4x8xf32>)
  memref.store %v, %x[%c0, %c0] : memref<4x3xf32>
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x3xf32>, memref<8x3xf32>) outs(%y : memref<4x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(t, b, n, k) -> (t, b, k)>
#w = affine_map<(t, b, n, k) -> (n, k)>
#out = affine_map<(t, b, n, k) -> (t, b, n)>

// The next layer's projection reads rows 1..T of a sequence with a row for
// the initial state: whether the rows are packed depends on the batch, so
// the GEMM runs under a run-time check of the strides (stride[0] ==
// stride[1] * size[1]) and the contraction, with its zero fill, is the
// fallback.
// CHECK-LABEL: func.func @packed_at_run_time
// CHECK: %{{.*}}, %{{.*}}, %[[SIZES:.*]]:3, %[[STRIDES:.*]]:3 = memref.extract_strided_metadata %arg0
// CHECK: %[[ROW:.*]] = arith.muli %[[STRIDES]]#1, %[[SIZES]]#1
// CHECK: %[[PACKED:.*]] = arith.cmpi eq, %[[STRIDES]]#0, %[[ROW]]
// CHECK: scf.if %[[PACKED]] {
// CHECK-NOT: linalg.fill
// CHECK: call @rnn_cpu_gemm
// CHECK: } else {
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-NOT: rnn.gemm_weight_layout
// CHECK: }
func.func @packed_at_run_time(%x: memref<?x?x3xf32, strided<[?, 3, 1], offset: ?>>, %w: memref<8x3xf32>, %y: memref<?x?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x3xf32, strided<[?, 3, 1], offset: ?>>, memref<8x3xf32>) outs(%y : memref<?x?x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(t, b, n, k) -> (t, b, k)>
#w = affine_map<(t, b, n, k) -> (k, n)>
#out = affine_map<(t, b, n, k) -> (t, b, n)>
#id = affine_map<(t, b, n) -> (t, b, n)>

// A bf16 product stored in f32 only to be rounded to bf16 (the input
// gradient of a bf16 backward): the call stores it rounded itself (C code 2,
// bf16), the rounding generic and the f32 buffer go.
// CHECK-LABEL: func.func @rounded_store
// CHECK-NOT: memref.alloc
// CHECK: %[[YP:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK: %[[YA:.*]] = arith.addi %[[YP]]
// CHECK: %[[Y:.*]] = arith.index_cast %[[YA]] : index to i64
// CHECK: %[[AB:.*]] = arith.constant 2 : i32
// CHECK: %[[C:.*]] = arith.constant 2 : i32
// CHECK: %[[KN:.*]] = arith.constant 1 : i32
// CHECK: call @rnn_cpu_gemm(%[[AB]], %[[C]], %[[KN]], {{.*}}, %[[Y]], %{{.*}})
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
func.func @rounded_store(%d: memref<?x?x8xbf16>, %w: memref<8x3xbf16>, %y: memref<?x?x3xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.dim %d, %c0 : memref<?x?x8xbf16>
  %b = memref.dim %d, %c1 : memref<?x?x8xbf16>
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc(%t, %b) : memref<?x?x3xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<?x?x3xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%d, %w : memref<?x?x8xbf16>, memref<8x3xbf16>) outs(%p : memref<?x?x3xf32>)
      attrs = {rnn.gemm_weight_layout = 1 : i32} {
  ^bb0(%a: bf16, %v: bf16, %c: f32):
    %ae = arith.extf %a : bf16 to f32
    %ve = arith.extf %v : bf16 to f32
    %m = arith.mulf %ae, %ve : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : memref<?x?x3xf32>) outs(%y : memref<?x?x3xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %p : memref<?x?x3xf32>
  return
}

// -----

#in = affine_map<(t, b, n, k) -> (t, b, k)>
#w = affine_map<(t, b, n, k) -> (k, n)>
#out = affine_map<(t, b, n, k) -> (t, b, n)>
#id = affine_map<(t, b, n) -> (t, b, n)>

// The f32 product is read by something besides the rounding (here a
// second elementwise op): the GEMM keeps writing it in f32.
// CHECK-LABEL: func.func @product_read_twice
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: call @rnn_cpu_gemm(%[[BF16]], %[[F32]],
// CHECK: arith.truncf
// CHECK: arith.negf
func.func @product_read_twice(%d: memref<?x?x8xbf16>, %w: memref<8x3xbf16>, %y: memref<?x?x3xbf16>, %z: memref<?x?x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.dim %d, %c0 : memref<?x?x8xbf16>
  %b = memref.dim %d, %c1 : memref<?x?x8xbf16>
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc(%t, %b) : memref<?x?x3xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<?x?x3xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%d, %w : memref<?x?x8xbf16>, memref<8x3xbf16>) outs(%p : memref<?x?x3xf32>)
      attrs = {rnn.gemm_weight_layout = 1 : i32} {
  ^bb0(%a: bf16, %v: bf16, %c: f32):
    %ae = arith.extf %a : bf16 to f32
    %ve = arith.extf %v : bf16 to f32
    %m = arith.mulf %ae, %ve : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : memref<?x?x3xf32>) outs(%y : memref<?x?x3xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : memref<?x?x3xf32>) outs(%z : memref<?x?x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  }
  memref.dealloc %p : memref<?x?x3xf32>
  return
}

// -----

#in = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>

// The rounded product's buffer allocated between the product and the
// rounding (where bufferization places it): its allocation moves before the
// call, which stores into it.
// CHECK-LABEL: func.func @target_allocated_after
// CHECK: %[[Y:.*]] = memref.alloc() : memref<4x3xbf16>
// CHECK-NOT: memref.alloc
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: call @rnn_cpu_gemm
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
func.func @target_allocated_after(%d: memref<4x8xbf16>, %w: memref<8x3xbf16>) -> memref<4x3xbf16> {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<4x3xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<4x3xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%d, %w : memref<4x8xbf16>, memref<8x3xbf16>) outs(%p : memref<4x3xf32>)
      attrs = {rnn.gemm_weight_layout = 1 : i32} {
  ^bb0(%a: bf16, %v: bf16, %c: f32):
    %ae = arith.extf %a : bf16 to f32
    %ve = arith.extf %v : bf16 to f32
    %m = arith.mulf %ae, %ve : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  %y = memref.alloc() : memref<4x3xbf16>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<4x3xf32>) outs(%y : memref<4x3xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %p : memref<4x3xf32>
  return %y : memref<4x3xbf16>
}

// -----

#in = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>

// A state updated as the rounded product of itself (h = bf16(h·U)): the
// GEMM would write what it reads, so it keeps its f32 buffer and the
// rounding stays.
// CHECK-LABEL: func.func @target_is_an_operand
// CHECK-DAG: %[[BF16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: call @rnn_cpu_gemm(%[[BF16]], %[[F32]],
// CHECK: arith.truncf
func.func @target_is_an_operand(%h: memref<4x4xbf16>, %u: memref<4x4xbf16>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<4x4xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %u : memref<4x4xbf16>, memref<4x4xbf16>) outs(%p : memref<4x4xf32>)
      attrs = {rnn.gemm_weight_layout = 1 : i32} {
  ^bb0(%a: bf16, %v: bf16, %c: f32):
    %ae = arith.extf %a : bf16 to f32
    %ve = arith.extf %v : bf16 to f32
    %m = arith.mulf %ae, %ve : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<4x4xf32>) outs(%h : memref<4x4xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %p : memref<4x4xf32>
  return
}

// -----

#in = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>

// f32 operands rounded to bf16: no GEMM stores a type other than its
// operands' or f32, so the product stays f32 and the rounding a kernel.
// CHECK-LABEL: func.func @f32_operands_rounded
// CHECK: %[[AB:.*]] = arith.constant 0 : i32
// CHECK: %[[C:.*]] = arith.constant 0 : i32
// CHECK: call @rnn_cpu_gemm(%[[AB]], %[[C]],
// CHECK: arith.truncf
func.func @f32_operands_rounded(%d: memref<4x8xf32>, %w: memref<8x3xf32>, %y: memref<4x3xbf16>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<4x3xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<4x3xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%d, %w : memref<4x8xf32>, memref<8x3xf32>) outs(%p : memref<4x3xf32>)
      attrs = {rnn.gemm_weight_layout = 1 : i32} {
  ^bb0(%a: f32, %v: f32, %c: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<4x3xf32>) outs(%y : memref<4x3xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %p : memref<4x3xf32>
  return
}
