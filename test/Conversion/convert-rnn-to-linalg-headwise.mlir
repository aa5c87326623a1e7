// RUN: rnn-opt %s -split-input-file --convert-rnn-to-linalg | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-lower-to-llvm-cpu | FileCheck %s --check-prefix=CPU

// A head-wise product is one contraction on views with heads and gates
// dimensions of their own: lhs [B, NH·K] as [B, NH, K], the weight
// [NH, G·N, K] as [NH, G, N, K], the result written as [B, G, NH, N] and
// merged into the gate-major [B, G·NH·N]. It is marked with its form
// (rnn.headwise_gemm = 0: forward), not as a GEMM of rows: the library GEMM
// lowering makes it batched calls (convert-matmul-to-library-gemm-headwise.mlir).
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK: func.func @forward
// CHECK-DAG: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] {{.*}} : tensor<?x8xf32> into tensor<?x2x4xf32>
// CHECK-DAG: %[[R:.*]] = tensor.expand_shape %arg1 {{\[\[}}0], [1, 2], [3]] {{.*}} : tensor<2x12x4xf32> into tensor<2x3x4x4xf32>
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<?x3x2x4xf32>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[LHS]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[R]] : tensor<?x2x4xf32>, tensor<2x3x4x4xf32>) outs(%[[Z]] : tensor<?x3x2x4xf32>) attrs = {rnn.headwise_gemm = 0 : i32}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape %[[P]] {{\[\[}}0], [1, 2, 3]] : tensor<?x3x2x4xf32> into tensor<?x24xf32>
// The CPU backend: one batched call per gate (the heads as the batch).
// CPU: llvm.func @forward
// CPU-COUNT-3: llvm.call @rnn_cpu_gemm_batched(
// CPU-NOT: llvm.call @rnn_cpu_gemm
// CPU: llvm.func @transposed
func.func @forward(%h: tensor<?x8xf32>, %R: tensor<2x12x4xf32>) -> tensor<?x24xf32> {
  %g = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  return %g : tensor<?x24xf32>
}

// -----

// Transposed: the gate-major operand is read as [B, G, NH, N] and g, j are
// reduced; bf16 operands are extended to the f32 result in the body.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK: func.func @transposed
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins({{.*}} : tensor<?x3x2x4xbf16>, tensor<2x3x4x4xbf16>) outs({{.*}} : tensor<?x2x4xf32>) attrs = {rnn.headwise_gemm = 1 : i32}
// CHECK: arith.extf
// CHECK: tensor.collapse_shape {{.*}} : tensor<?x2x4xf32> into tensor<?x8xf32>
// CPU-COUNT-3: llvm.call @rnn_cpu_gemm_batched(
// CPU: llvm.func @outer
func.func @transposed(%g: tensor<?x24xbf16>, %R: tensor<2x12x4xbf16>) -> tensor<?x8xf32> {
  %d = rnn.headwise_matmul %g, %R gates 3 transposed : tensor<?x24xbf16>, tensor<2x12x4xbf16> -> tensor<?x8xf32>
  return %d : tensor<?x8xf32>
}

// -----

// The weight gradient reduces over every row: [T, B, ·] operands collapse to
// rows first.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d4, d1, d0, d2)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d4, d0, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK: func.func @outer
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<?x?x24xf32> into tensor<?x24xf32>
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs({{.*}} : tensor<2x3x4x4xf32>) attrs = {rnn.headwise_gemm = 2 : i32}
// CHECK: tensor.collapse_shape {{.*}} {{\[\[}}0], [1, 2], [3]] : tensor<2x3x4x4xf32> into tensor<2x12x4xf32>
// CPU-COUNT-3: llvm.call @rnn_cpu_gemm_batched(
func.func @outer(%g: tensor<?x?x24xf32>, %h: tensor<?x?x8xf32>) -> tensor<2x12x4xf32> {
  %d = rnn.headwise_outer_sum %g, %h gates 3 : tensor<?x?x24xf32>, tensor<?x?x8xf32> -> tensor<2x12x4xf32>
  return %d : tensor<2x12x4xf32>
}

// -----

// One head is the dense product, on both backends: the matrix [1, G·N, K]
// collapsed to [G·N, K] and one marked contraction (a GEMM), as rnn.matmul
// lowers; the transposed form reads it as [K, N]; the weight gradient is
// the outer sum's generic with one head.
// CHECK-LABEL: func.func @one_head
// CHECK: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2]] : tensor<1x12x4xf32> into tensor<12x4xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[W]] : tensor<?x4xf32>, tensor<12x4xf32>) {{.*}} attrs = {rnn.gemm_weight_layout = 0 : i32}
// CHECK: %[[WT:.*]] = tensor.collapse_shape %arg1
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[WT]] : tensor<?x12xf32>, tensor<12x4xf32>) {{.*}} attrs = {rnn.gemm_weight_layout = 1 : i32}
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<1x3x4x4xf32>) attrs = {rnn.headwise_gemm = 2 : i32}
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : tensor<1x3x4x4xf32> into tensor<1x12x4xf32>
func.func @one_head(%x: tensor<?x4xf32>, %R: tensor<1x12x4xf32>)
    -> (tensor<?x12xf32>, tensor<?x4xf32>, tensor<1x12x4xf32>) {
  %y = rnn.headwise_matmul %x, %R gates 3 : tensor<?x4xf32>, tensor<1x12x4xf32> -> tensor<?x12xf32>
  %z = rnn.headwise_matmul %y, %R gates 3 transposed : tensor<?x12xf32>, tensor<1x12x4xf32> -> tensor<?x4xf32>
  %d = rnn.headwise_outer_sum %y, %x gates 3 : tensor<?x12xf32>, tensor<?x4xf32> -> tensor<1x12x4xf32>
  return %y, %z, %d : tensor<?x12xf32>, tensor<?x4xf32>, tensor<1x12x4xf32>
}
