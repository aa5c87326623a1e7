// RUN: rnn-opt %s -split-input-file --rnn-bufferize --convert-matmul-to-library-gemm="batched-function=rnn_cuda_gemm_batched tf32-flag" --canonicalize --cse | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-bufferize --convert-matmul-to-library-gemm | FileCheck %s --check-prefix=OFF

// A head-wise product becomes one strided-batched call per gate, the heads
// as the batch: (ab_dtype, c_dtype, b_layout, batch, m, n, k, a, lda,
// stride_a, b, ldb, stride_b, c, ldc, stride_c). Forward, NH = 2, G = 3,
// N = K = 4: A = x [B, NH·K] (lda 8, a head 4 columns on), B = R[h, g]
// [N, K] (layout 0; ldb 4, a head 48 elements on, gate g 16·g = 64 bytes
// on), C = the gate-major result [B, G·NH·N] (ldc 24, a head 4 columns on,
// gate g 8·g = 32 bytes on). Each call overwrites its gate (the zero fill is
// dead).
// CHECK-LABEL: func.func @forward
// CHECK: %[[M:.*]] = arith.index_cast %sizes#0
// CHECK: %[[B:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[C:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: call @rnn_cuda_gemm_batched(%c0_i32, %c0_i32, %c0_i32, %c2_i64, %[[M]], %c4_i64, %c4_i64, %[[A:.*]], %c8_i64, %c4_i64, %[[B]], %c4_i64, %c48_i64, %[[C]], %c24_i64, %c4_i64)
// CHECK: %[[B1:.*]] = arith.addi %[[B]], %c64_i64
// CHECK: %[[C1:.*]] = arith.addi %[[C]], %c32_i64
// CHECK: call @rnn_cuda_gemm_batched(%c0_i32, %c0_i32, %c0_i32, %c2_i64, %[[M]], %c4_i64, %c4_i64, %[[A]], %c8_i64, %c4_i64, %[[B1]], %c4_i64, %c48_i64, %[[C1]], %c24_i64, %c4_i64)
// CHECK: call @rnn_cuda_gemm_batched
// CHECK-NOT: call @rnn_cuda_gemm_batched
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK: return
// Without a batched function the generic stays (loops).
// OFF-LABEL: func.func @forward
// OFF-NOT: call
// OFF: linalg.generic {{.*}} attrs = {rnn.headwise_gemm = 0 : i32}
func.func @forward(%h: tensor<?x8xf32>, %R: tensor<2x12x4xf32>) -> tensor<?x24xf32> {
  %g = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  return %g : tensor<?x24xf32>
}

// -----

// Transposed: the gates add up into one result [B, NH·K]: gate 0 overwrites
// (b_layout 1: R[h, g] [N, K] is k x n), gates 1 and 2 accumulate (1 + 4);
// A is gate g's columns of the bf16 gradient (2 bytes: 16·g bytes on).
// CHECK-LABEL: func.func @transposed
// CHECK: call @rnn_cuda_gemm_batched(%c2_i32, %c0_i32, %c1_i32, %c2_i64, %[[M:.*]], %c4_i64, %c4_i64, %[[A:.*]], %c24_i64, %c4_i64, %[[B:.*]], %c4_i64, %c48_i64, %[[C:.*]], %c8_i64, %c4_i64)
// CHECK: %[[A1:.*]] = arith.addi %[[A]], %c16_i64
// CHECK: call @rnn_cuda_gemm_batched(%c2_i32, %c0_i32, %c5_i32, %c2_i64, %[[M]], %c4_i64, %c4_i64, %[[A1]], %c24_i64, %c4_i64, %{{.*}}, %c4_i64, %c48_i64, %[[C]], %c8_i64, %c4_i64)
// CHECK: call @rnn_cuda_gemm_batched(%c2_i32, %c0_i32, %c5_i32,
func.func @transposed(%g: tensor<?x24xbf16>, %R: tensor<2x12x4xbf16>) -> tensor<?x8xf32> {
  %d = rnn.headwise_matmul %g, %R gates 3 transposed : tensor<?x24xbf16>, tensor<2x12x4xbf16> -> tensor<?x8xf32>
  return %d : tensor<?x8xf32>
}

// -----

// The outer sum over all T·B rows: A is the gradient's gate g, head h
// stored [R, N] (k x m: b_layout 1 + 32 = 33, lda 24, a head 4 columns
// on), B = x's head h [R, K] (k x n, ldb 8), C = dR[h, g] [N, K] (ldc 4, a
// head 48 elements on); m = N, n = K, k = the rows. TF32 allowed: + 2.
// CHECK-LABEL: func.func @outer
// CHECK: %[[R:.*]] = arith.index_cast %sizes#0
// CHECK: call @rnn_cuda_gemm_batched(%c0_i32, %c0_i32, %c35_i32, %c2_i64, %c4_i64, %c4_i64, %[[R]], %{{.*}}, %c24_i64, %c4_i64, %{{.*}}, %c8_i64, %c4_i64, %{{.*}}, %c4_i64, %c48_i64)
// CHECK-COUNT-2: call @rnn_cuda_gemm_batched(%c0_i32, %c0_i32, %c35_i32, %c2_i64, %c4_i64, %c4_i64, %[[R]],
func.func @outer(%g: tensor<?x?x24xf32>, %h: tensor<?x?x8xf32>) -> tensor<2x12x4xf32> {
  %d = rnn.headwise_outer_sum %g, %h gates 3 allow_tf32 : tensor<?x?x24xf32>, tensor<?x?x8xf32> -> tensor<2x12x4xf32>
  return %d : tensor<2x12x4xf32>
}

// -----

// Rows over several dimensions ([T, B, ·], packed by the type): m = T·B.
// CHECK-LABEL: func.func @sequence
// CHECK: %[[T:.*]] = arith.index_cast %sizes#0
// CHECK: %[[B:.*]] = arith.index_cast %sizes#1
// CHECK: %[[M:.*]] = arith.muli %[[T]], %[[B]] : i64
// CHECK-COUNT-3: call @rnn_cuda_gemm_batched(%c0_i32, %c0_i32, %c0_i32, %c2_i64, %[[M]], %c4_i64, %c4_i64,
func.func @sequence(%x: tensor<?x?x8xf32>, %R: tensor<2x12x4xf32>) -> tensor<?x?x24xf32> {
  %g = rnn.headwise_matmul %x, %R gates 3 : tensor<?x?x8xf32>, tensor<2x12x4xf32> -> tensor<?x?x24xf32>
  return %g : tensor<?x?x24xf32>
}

// -----

// The two weight gradients of a bf16 backward with I = H: outer sums of one
// shape, each rounded to bf16. Each gets its own zero fill
// (split-shared-fills; CSE had merged them, and bufferization then gave the
// second a copy of the first's zeros), so both calls overwrite (33, no
// accumulate bit 4), and each stores its product rounded in the result
// (C code 2): no f32 buffer, no copy, no rounding kernel.
// CHECK-LABEL: func.func @weight_gradients16
// CHECK-NOT: memref.copy
// CHECK: memref.expand_shape %arg3 {{\[\[}}0, 1, 2], [3]] output_shape [1, 1, 8, 4] : memref<8x4xbf16> into memref<1x1x8x4xbf16>
// CHECK: call @rnn_cuda_gemm_batched(%c2_i32, %c2_i32, %c33_i32, %c1_i64, %c8_i64, %c4_i64,
// CHECK: memref.expand_shape %arg4 {{\[\[}}0, 1, 2], [3]] output_shape [1, 1, 8, 4] : memref<8x4xbf16> into memref<1x1x8x4xbf16>
// CHECK: call @rnn_cuda_gemm_batched(%c2_i32, %c2_i32, %c33_i32, %c1_i64, %c8_i64, %c4_i64,
// CHECK-NOT: arith.truncf
// CHECK-NOT: memref.copy
// OFF-LABEL: func.func @weight_gradients16
// OFF-COUNT-2: arith.truncf
func.func @weight_gradients16(%d: tensor<?x?x8xbf16>, %x: tensor<?x?x4xbf16>, %h: tensor<?x?x4xbf16>)
    -> (tensor<8x4xbf16>, tensor<8x4xbf16>) {
  %dw = rnn.outer_sum %d, %x : tensor<?x?x8xbf16>, tensor<?x?x4xbf16> -> tensor<8x4xf32>
  %dw16 = rnn.cast %dw : tensor<8x4xf32> to tensor<8x4xbf16>
  %du = rnn.outer_sum %d, %h : tensor<?x?x8xbf16>, tensor<?x?x4xbf16> -> tensor<8x4xf32>
  %du16 = rnn.cast %du : tensor<8x4xf32> to tensor<8x4xbf16>
  return %dw16, %du16 : tensor<8x4xbf16>, tensor<8x4xbf16>
}
