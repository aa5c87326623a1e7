// RUN: rnn-opt %s -split-input-file --convert-matmul-to-library-gemm='function=rnn_cuda_gemm k-partials=8' | FileCheck %s
// RUN: rnn-opt %s -split-input-file --convert-matmul-to-library-gemm | FileCheck %s --check-prefix=OFF

#a = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// A recurrent product (K = 1024, N = 1024) that one elementwise kernel reads:
// split into 8 K slices written to a [8, M, N] buffer by one call, which the
// consumer adds up. Batches of fewer than 16 rows (or partials over 16 MiB)
// keep the plain GEMM and consumer, and allocate the buffer empty.
// CHECK: func.func private @rnn_cuda_gemm_partials(i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @step
// CHECK: %[[P:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x?x1024xf32>
// CHECK: scf.for
// CHECK: %[[ROWS:.*]] = memref.dim %[[C:.*]], %c0
// CHECK: %[[MANY:.*]] = arith.cmpi sge, %[[ROWS]], %c16
// CHECK: scf.if
// CHECK: call @rnn_cuda_gemm_partials(%{{.*}}, %{{.*}}, %{{.*}}, %c8_i64,
// CHECK: memref.subview %[[P]][7, 0, 0] [1, %{{.*}}, 1024] [1, 1, 1]
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: ^bb0(%[[S0:.*]]: f32, %[[S1:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %[[S7:.*]]: f32, %[[H:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[SUM1:.*]] = arith.addf %[[S0]], %[[S1]]
// CHECK-COUNT-6: arith.addf
// CHECK: math.tanh
// CHECK: } else {
// CHECK-NOT: linalg.fill
// CHECK: call @rnn_cuda_gemm(
// CHECK: linalg.generic
// CHECK: memref.dealloc %[[C]]
// CHECK-NEXT: memref.dealloc %[[P]]
// OFF-LABEL: func.func @step
// OFF-NOT: rnn_cuda_gemm_partials
// OFF-NOT: scf.if
func.func @step(%h: memref<?x1024xf32>, %u: memref<1024x1024xf32>, %ys: memref<?x?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xf32>
  %prod = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<1024x1024xf32>) outs(%prod : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32, rnn.gemm_allow_tf32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    %row = memref.subview %ys[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod, %h : memref<?x1024xf32>, memref<?x1024xf32>) outs(%row : memref<?x1024xf32, strided<[1024, 1], offset: ?>>) {
    ^bb0(%p: f32, %hv: f32, %o: f32):
      %v = math.tanh %p : f32
      %w = arith.mulf %v, %hv : f32
      linalg.yield %w : f32
    }
  }
  memref.dealloc %prod : memref<?x1024xf32>
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// N = 2048 in f32: as many slices as below N / 2 (the CUDA runtime's own
// kernel runs f32 partials); with bf16 operands (cuBLAS runs them) half as
// many (4).
// CHECK-LABEL: func.func @wider
// CHECK: call @rnn_cuda_gemm_partials(%{{.*}}, %{{.*}}, %{{.*}}, %c8_i64,
// CHECK-LABEL: func.func @wider_bf16
// CHECK: call @rnn_cuda_gemm_partials(%{{.*}}, %{{.*}}, %{{.*}}, %c4_i64,
func.func @wider(%h: memref<?x1024xf32>, %u: memref<2048x1024xf32>, %out: memref<?x2048xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xf32>
  %prod = memref.alloc(%rows) : memref<?x2048xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x2048xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<2048x1024xf32>) outs(%prod : memref<?x2048xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x2048xf32>) outs(%out : memref<?x2048xf32>) {
    ^bb0(%p: f32, %o: f32):
      %v = math.tanh %p : f32
      linalg.yield %v : f32
    }
  }
  memref.dealloc %prod : memref<?x2048xf32>
  return
}
func.func @wider_bf16(%h: memref<?x1024xbf16>, %u: memref<2048x1024xbf16>, %out: memref<?x2048xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xbf16>
  %prod = memref.alloc(%rows) : memref<?x2048xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x2048xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xbf16>, memref<2048x1024xbf16>) outs(%prod : memref<?x2048xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: bf16, %y: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %ye = arith.extf %y : bf16 to f32
      %m = arith.mulf %xe, %ye : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x2048xf32>) outs(%out : memref<?x2048xf32>) {
    ^bb0(%p: f32, %o: f32):
      %v = math.tanh %p : f32
      linalg.yield %v : f32
    }
  }
  memref.dealloc %prod : memref<?x2048xf32>
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// Left as plain GEMMs: K below 1024; a product accumulated onto its buffer
// (no zero fill); a product read again after its consumer (the partials
// would never be added up for that reader); a consumer that writes into
// the product and reads what it overwrites (its output's value would be
// the buffer's, never computed).
// CHECK-LABEL: func.func @short_k
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @accumulated
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @read_again
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @reads_its_output
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK: return
func.func @short_k(%h: memref<?x512xf32>, %u: memref<1024x512xf32>, %out: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x512xf32>
  %prod = memref.alloc(%rows) : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x512xf32>, memref<1024x512xf32>) outs(%prod : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x1024xf32>) outs(%out : memref<?x1024xf32>) {
    ^bb0(%p: f32, %o: f32):
      %v = math.tanh %p : f32
      linalg.yield %v : f32
    }
  }
  memref.dealloc %prod : memref<?x1024xf32>
  return
}
func.func @accumulated(%h: memref<?x1024xf32>, %u: memref<1024x1024xf32>, %out: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %h, %c0 : memref<?x1024xf32>
  %prod = memref.alloc(%rows) : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<1024x1024xf32>) outs(%prod : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x1024xf32>) outs(%out : memref<?x1024xf32>) {
    ^bb0(%p: f32, %o: f32):
      %v = math.tanh %p : f32
      linalg.yield %v : f32
    }
  }
  memref.dealloc %prod : memref<?x1024xf32>
  return
}
func.func @read_again(%h: memref<?x1024xf32>, %u: memref<1024x1024xf32>, %out: memref<?x1024xf32>, %out2: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xf32>
  %prod = memref.alloc(%rows) : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<1024x1024xf32>) outs(%prod : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x1024xf32>) outs(%out : memref<?x1024xf32>) {
    ^bb0(%p: f32, %o: f32):
      %v = math.tanh %p : f32
      linalg.yield %v : f32
    }
    memref.copy %prod, %out2 : memref<?x1024xf32> to memref<?x1024xf32>
  }
  memref.dealloc %prod : memref<?x1024xf32>
  return
}
func.func @reads_its_output(%h: memref<?x1024xf32>, %u: memref<1024x1024xf32>, %out: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xf32>
  %prod = memref.alloc(%rows) : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<1024x1024xf32>) outs(%prod : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x1024xf32>) outs(%prod, %out : memref<?x1024xf32>, memref<?x1024xf32>) {
    ^bb0(%p: f32, %old: f32, %o: f32):
      %v = math.tanh %p : f32
      %w = arith.addf %v, %old : f32
      linalg.yield %v, %w : f32, f32
    }
  }
  memref.dealloc %prod : memref<?x1024xf32>
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// Concatenated gates: the consumer reads two windows of the product (r and
// z); it reads the same windows of each of the 4 partials instead (bf16
// operands at N = 2048: 4 slices).
// CHECK-LABEL: func.func @windows
// CHECK: %[[P:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2048xf32>
// CHECK: call @rnn_cuda_gemm_partials(%{{.*}}, %{{.*}}, %{{.*}}, %c4_i64,
// CHECK: %[[S0:.*]] = memref.subview %[[P]][0, 0, 0] [1, %{{.*}}, 2048]
// CHECK: %[[S3:.*]] = memref.subview %[[P]][3, 0, 0] [1, %{{.*}}, 2048]
// CHECK: %[[Z0:.*]] = memref.subview %[[S0]][0, 1024] [%{{.*}}, 1024] [1, 1]
// CHECK: %[[R0:.*]] = memref.subview %[[S0]][0, 0] [%{{.*}}, 1024] [1, 1]
// CHECK: %[[R3:.*]] = memref.subview %[[S3]][0, 0] [%{{.*}}, 1024] [1, 1]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[R0]], %{{.*}}, %{{.*}}, %[[R3]], %[[Z0]],
// CHECK: ^bb0(%[[A0:[^:]*]]: f32, %[[A1:[^:]*]]: f32, %[[A2:[^:]*]]: f32, %[[A3:[^:]*]]: f32, %[[B0:[^:]*]]: f32, %[[B1:[^:]*]]: f32,
// CHECK: %[[Z:.*]] = arith.addf %[[B0]], %[[B1]]
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = arith.addf %[[A0]], %[[A1]]
// CHECK: } else {
func.func @windows(%h: memref<?x1024xbf16>, %u: memref<2048x1024xbf16>, %out: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xbf16>
  %prod = memref.alloc(%rows) : memref<?x2048xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x2048xf32>)
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xbf16>, memref<2048x1024xbf16>) outs(%prod : memref<?x2048xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: bf16, %y: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %ye = arith.extf %y : bf16 to f32
      %m = arith.mulf %xe, %ye : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    %r = memref.subview %prod[0, 0] [%rows, 1024] [1, 1] : memref<?x2048xf32> to memref<?x1024xf32, strided<[2048, 1]>>
    %z = memref.subview %prod[0, 1024] [%rows, 1024] [1, 1] : memref<?x2048xf32> to memref<?x1024xf32, strided<[2048, 1], offset: 1024>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%r, %z : memref<?x1024xf32, strided<[2048, 1]>>, memref<?x1024xf32, strided<[2048, 1], offset: 1024>>)
        outs(%out : memref<?x1024xf32>) {
    ^bb0(%rv: f32, %zv: f32, %o: f32):
      %v = arith.mulf %rv, %zv : f32
      linalg.yield %v : f32
    }
  }
  memref.dealloc %prod : memref<?x2048xf32>
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// Pure ops between the fill and the product, and between the product and its
// consumer (one using the other), move ahead of the branch in order.
// CHECK-LABEL: func.func @pure_ops_between
// CHECK: scf.for %[[I:.*]] =
// CHECK: %[[ROW:.*]] = arith.addi %[[I]], %c1
// CHECK: %[[OUT:.*]] = memref.subview %{{.*}}[%[[ROW]], 0, 0]
// CHECK: scf.if
// CHECK: call @rnn_cuda_gemm_partials(
// CHECK: outs(%[[OUT]] :
func.func @pure_ops_between(%h: memref<?x1024xf32>, %u: memref<1024x1024xf32>, %ys: memref<?x?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %h, %c0 : memref<?x1024xf32>
  %prod = memref.alloc(%rows) : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    linalg.fill ins(%zero : f32) outs(%prod : memref<?x1024xf32>)
    %next = arith.addi %i, %c1 : index
    linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<?x1024xf32>, memref<1024x1024xf32>) outs(%prod : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    %row = memref.subview %ys[%next, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%prod : memref<?x1024xf32>) outs(%row : memref<?x1024xf32, strided<[1024, 1], offset: ?>>) {
    ^bb0(%p: f32, %o: f32):
      %v = math.tanh %p : f32
      linalg.yield %v : f32
    }
  }
  memref.dealloc %prod : memref<?x1024xf32>
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#kn = affine_map<(b, n, k) -> (k, n)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// Across the loop's back edge: a backward's recurrent product dG·U (U stored
// [K, N], K = 4096, N = 1024, bf16) ends the body and overwrites %dh, which
// the next step's kernel reads first. The partials buffer is made before the
// loop, zeros with the first slice a copy of %dh (what the first step reads);
// in the body the kernel sums the 8 slices and the call writes them (flags:
// layout 1); after the loop the sum goes back into %dh.
// CHECK-LABEL: func.func @carried
// CHECK: %[[ROWS:.*]] = memref.dim %[[DH:.*]], %c0_0
// CHECK: %[[MANY:.*]] = arith.cmpi sge, %[[ROWS]], %c16
// CHECK: %[[WORTH:.*]] = arith.andi %[[MANY]], %{{.*}} : i1
// CHECK: %[[COUNT:.*]] = arith.select %[[WORTH]], %c8, %c0
// CHECK: %[[P:.*]] = memref.alloc(%[[COUNT]], %[[ROWS]]) {alignment = 64 : i64} : memref<?x?x1024xf32>
// CHECK: scf.if %[[WORTH]] {
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.0
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[P]] :
// CHECK-NEXT: %[[FIRST:.*]] = memref.subview %[[P]][0, 0, 0] [1, %[[ROWS]], 1024]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[DH]] : memref<?x1024xf32>) outs(%[[FIRST]] :
// CHECK: scf.for
// CHECK: scf.if %[[WORTH]] {
// CHECK: linalg.generic
// CHECK: ^bb0(%[[DY:[^:]*]]: f32, %[[S0:[^:]*]]: f32, %[[S1:[^:]*]]: f32,
// CHECK-NEXT: arith.addf %[[S0]], %[[S1]]
// CHECK-COUNT-6: arith.addf
// CHECK-NEXT: arith.addf %[[DY]],
// CHECK: } else {
// CHECK: linalg.generic
// CHECK: scf.if %[[WORTH]] {
// CHECK: call @rnn_cuda_gemm_partials(%c2_i32, %c0_i32, %c1_i32, %c8_i64, %{{.*}}, %c1024_i64, %c4096_i64,
// CHECK: } else {
// CHECK-NOT: linalg.fill
// CHECK: call @rnn_cuda_gemm(
// CHECK: scf.if %[[WORTH]] {
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{.*}}) outs(%[[DH]] : memref<?x1024xf32>)
// CHECK-COUNT-7: arith.addf
// CHECK: memref.dealloc %[[P]]
// OFF-LABEL: func.func @carried
// OFF-NOT: rnn_cuda_gemm_partials
func.func @carried(%dg: memref<?x?x4096xbf16>, %u: memref<4096x1024xbf16>, %dys: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %dy = memref.subview %dys[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xbf16> to memref<?x4096xbf16, strided<[4096, 1], offset: ?>>
    %g0 = memref.subview %g[0, 0] [%rows, 1024] [1, 1] : memref<?x4096xbf16, strided<[4096, 1], offset: ?>> to memref<?x1024xbf16, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dy, %dh : memref<?x1024xf32, strided<[1024, 1], offset: ?>>, memref<?x1024xf32>) outs(%g0 : memref<?x1024xbf16, strided<[4096, 1], offset: ?>>) {
    ^bb0(%y: f32, %r: f32, %o: bf16):
      %s = arith.addf %y, %r : f32
      %b = arith.truncf %s : f32 to bf16
      linalg.yield %b : bf16
    }
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xbf16, strided<[4096, 1], offset: ?>>, memref<4096x1024xbf16>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: bf16, %w: bf16, %acc: f32):
      %xf = arith.extf %x : bf16 to f32
      %wf = arith.extf %w : bf16 to f32
      %m = arith.mulf %xf, %wf : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#kn = affine_map<(b, n, k) -> (k, n)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// The product adds onto what the step's kernel wrote into %dh (a GRU's direct
// path, then + dG·U; no fill): the partials start as zeros, the kernel reads
// %dh plus the 8 f32 slices (and still overwrites %dh), and after the loop
// %dh gets the slices added.
// CHECK-LABEL: func.func @carried_onto_direct_path
// CHECK: %[[P:.*]] = memref.alloc(%{{.*}}, %[[ROWS:.*]]) {alignment = 64 : i64} : memref<?x?x1024xf32>
// CHECK: scf.if
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: }
// CHECK: scf.for
// CHECK: scf.if
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[DH:.*]], %{{.*}} :
// CHECK: ^bb0(%[[Z:[^:]*]]: f32, %[[OLD:[^:]*]]: f32, %[[S0:[^:]*]]: f32,
// CHECK-NEXT: arith.addf %[[OLD]], %[[S0]]
// CHECK-COUNT-7: arith.addf
// CHECK-NEXT: arith.mulf %[[Z]],
// CHECK: call @rnn_cuda_gemm_partials(%c0_i32, %c0_i32{{.*}}, %c1_i32, %c8_i64,
// CHECK: } else {
// CHECK: call @rnn_cuda_gemm(%c0_i32{{.*}}, %c0_i32{{.*}}, %c5_i32,
// CHECK: linalg.generic {{.*}} ins(%[[DH]], {{.*}}) outs(%[[DH]] : memref<?x1024xf32>)
// CHECK-COUNT-8: arith.addf
// CHECK: memref.dealloc %[[P]]
func.func @carried_onto_direct_path(%dg: memref<?x?x3072xf32>, %u: memref<3072x1024xf32>, %zs: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %z = memref.subview %zs[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 3072] [1, 1, 1] : memref<?x?x3072xf32> to memref<?x3072xf32, strided<[3072, 1], offset: ?>>
    %g0 = memref.subview %g[0, 0] [%rows, 1024] [1, 1] : memref<?x3072xf32, strided<[3072, 1], offset: ?>> to memref<?x1024xf32, strided<[3072, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%z, %dh : memref<?x1024xf32, strided<[1024, 1], offset: ?>>, memref<?x1024xf32>) outs(%dh, %g0 : memref<?x1024xf32>, memref<?x1024xf32, strided<[3072, 1], offset: ?>>) {
    ^bb0(%zv: f32, %r: f32, %o: f32, %o2: f32):
      %d = arith.mulf %zv, %r : f32
      linalg.yield %d, %r : f32, f32
    }
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x3072xf32, strided<[3072, 1], offset: ?>>, memref<3072x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#kn = affine_map<(b, n, k) -> (k, n)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// Not split across the back edge: a second reader of %dh in the loop; a
// product that accumulates over the steps (no fill, and the kernel does not
// overwrite %dh: every step's product counts, not the last one's); a kernel
// that writes %dh ahead of a product that overwrites it.
// CHECK-LABEL: func.func @carried_read_twice
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @carried_sum_over_steps
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @carried_written_then_overwritten
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK: return
func.func @carried_read_twice(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %o1: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %o = memref.subview %o1[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dh : memref<?x1024xf32>) outs(%o : memref<?x1024xf32, strided<[1024, 1], offset: ?>>) {
    ^bb0(%r: f32, %out: f32):
      linalg.yield %r : f32
    }
    memref.copy %dh, %o : memref<?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}
func.func @carried_sum_over_steps(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %o1: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %o = memref.subview %o1[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dh : memref<?x1024xf32>) outs(%o : memref<?x1024xf32, strided<[1024, 1], offset: ?>>) {
    ^bb0(%r: f32, %out: f32):
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}
func.func @carried_written_then_overwritten(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %o1: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %o = memref.subview %o1[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dh : memref<?x1024xf32>) outs(%o, %dh : memref<?x1024xf32, strided<[1024, 1], offset: ?>>, memref<?x1024xf32>) {
    ^bb0(%r: f32, %out: f32, %out2: f32):
      linalg.yield %r, %r : f32, f32
    }
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#kn = affine_map<(b, n, k) -> (k, n)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// One kernel reads two loop-carried products: only the first is split (each
// rewrite replaces its consumer); the second stays a plain GEMM.
// CHECK-LABEL: func.func @carried_shared_consumer
// CHECK-COUNT-1: call @rnn_cuda_gemm_partials(
// CHECK-NOT: call @rnn_cuda_gemm_partials(
// CHECK: return
func.func @carried_shared_consumer(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %v: memref<4096x1024xf32>, %dh: memref<?x1024xf32>, %dc: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %g0 = memref.subview %g[0, 0] [%rows, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dh, %dc : memref<?x1024xf32>, memref<?x1024xf32>) outs(%g0 : memref<?x1024xf32, strided<[4096, 1], offset: ?>>) {
    ^bb0(%r: f32, %q: f32, %o: f32):
      %s = arith.addf %r, %q : f32
      linalg.yield %s : f32
    }
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.fill ins(%zero : f32) outs(%dc : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %v : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dc : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#kn = affine_map<(b, n, k) -> (k, n)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// The product's operand view made between the dead fill and the product
// moves ahead of the branch, where both branches see it.
// CHECK-LABEL: func.func @carried_view_after_fill
// CHECK: scf.for %[[I:.*]] =
// CHECK: scf.if
// CHECK: } else {
// CHECK: %[[G:.*]] = memref.subview %{{.*}}[%[[I]], 0, 0] [1, %{{.*}}, 4096]
// CHECK-NEXT: scf.if
// CHECK: memref.extract_strided_metadata %[[G]]
// CHECK: call @rnn_cuda_gemm_partials(
func.func @carried_view_after_fill(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %dys: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %dy = memref.subview %dys[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    %g0 = memref.subview %dg[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dy, %dh : memref<?x1024xf32, strided<[1024, 1], offset: ?>>, memref<?x1024xf32>) outs(%g0 : memref<?x1024xf32, strided<[4096, 1], offset: ?>>) {
    ^bb0(%y: f32, %r: f32, %o: f32):
      %s = arith.addf %y, %r : f32
      linalg.yield %s : f32
    }
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

#a = affine_map<(b, n, k) -> (b, k)>
#kn = affine_map<(b, n, k) -> (k, n)>
#c = affine_map<(b, n, k) -> (b, n)>
#id = affine_map<(b, n) -> (b, n)>

// Not split: the buffer read in the loop through a view made before it, or
// through the loop's iter_args (inside the loop the buffer no longer holds
// the product); a fill of 1.0 before the product (not dead: the product adds
// onto it, and the kernel does not overwrite the buffer).
// CHECK-LABEL: func.func @carried_read_through_view
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @carried_read_through_iter_args
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK-LABEL: func.func @carried_one_fill
// CHECK-NOT: rnn_cuda_gemm_partials
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<?x1024xf32>)
// CHECK: call @rnn_cuda_gemm(%c0_i32{{.*}}, %c0_i32{{.*}}, %c5_i32,
func.func @carried_read_through_view(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %outs: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  %view = memref.subview %dh[0, 0] [%rows, 1024] [1, 1] : memref<?x1024xf32> to memref<?x1024xf32, strided<[1024, 1]>>
  scf.for %i = %c0 to %t step %c1 {
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %g0 = memref.subview %g[0, 0] [%rows, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    %o = memref.subview %outs[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dh : memref<?x1024xf32>) outs(%g0 : memref<?x1024xf32, strided<[4096, 1], offset: ?>>) {
    ^bb0(%r: f32, %x: f32):
      linalg.yield %r : f32
    }
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    memref.copy %view, %o : memref<?x1024xf32, strided<[1024, 1]>> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
  }
  return
}
func.func @carried_read_through_iter_args(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %outs: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  %view = memref.subview %dh[0, 0] [%rows, 1024] [1, 1] : memref<?x1024xf32> to memref<?x1024xf32, strided<[1024, 1]>>
  %r = scf.for %i = %c0 to %t step %c1 iter_args(%it = %dh) -> (memref<?x1024xf32>) {
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %g0 = memref.subview %g[0, 0] [%rows, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    %o = memref.subview %outs[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dh : memref<?x1024xf32>) outs(%g0 : memref<?x1024xf32, strided<[4096, 1], offset: ?>>) {
    ^bb0(%r: f32, %x: f32):
      linalg.yield %r : f32
    }
    linalg.fill ins(%zero : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    memref.copy %it, %o : memref<?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    scf.yield %it : memref<?x1024xf32>
  }
  return
}
func.func @carried_one_fill(%dg: memref<?x?x4096xf32>, %u: memref<4096x1024xf32>, %dys: memref<?x?x1024xf32>, %dh: memref<?x1024xf32>, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %rows = memref.dim %dh, %c0 : memref<?x1024xf32>
  scf.for %i = %c0 to %t step %c1 {
    %dy = memref.subview %dys[%i, 0, 0] [1, %rows, 1024] [1, 1, 1] : memref<?x?x1024xf32> to memref<?x1024xf32, strided<[1024, 1], offset: ?>>
    %g = memref.subview %dg[%i, 0, 0] [1, %rows, 4096] [1, 1, 1] : memref<?x?x4096xf32> to memref<?x4096xf32, strided<[4096, 1], offset: ?>>
    %g0 = memref.subview %g[0, 0] [%rows, 1024] [1, 1] : memref<?x4096xf32, strided<[4096, 1], offset: ?>> to memref<?x1024xf32, strided<[4096, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%dy, %dh : memref<?x1024xf32, strided<[1024, 1], offset: ?>>, memref<?x1024xf32>) outs(%g0 : memref<?x1024xf32, strided<[4096, 1], offset: ?>>) {
    ^bb0(%y: f32, %r: f32, %o: f32):
      %s = arith.addf %y, %r : f32
      linalg.yield %s : f32
    }
    linalg.fill ins(%one : f32) outs(%dh : memref<?x1024xf32>)
    linalg.generic {indexing_maps = [#a, #kn, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%g, %u : memref<?x4096xf32, strided<[4096, 1], offset: ?>>, memref<4096x1024xf32>) outs(%dh : memref<?x1024xf32>)
        attrs = {rnn.gemm_weight_layout = 1 : i32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
  }
  return
}
