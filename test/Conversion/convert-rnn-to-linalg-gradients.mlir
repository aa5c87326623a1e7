// The ops of the derived backward lowered to linalg: a weight gradient is the
// head-wise outer sum with one head and one gate (the rows read transposed
// where they lie: one library GEMM, no transposed copy), a sum over all
// rows a row of ones times the rows (one GEMM), a sum to a
// row statistic a reducing generic, and the previous states one parallel
// generic that gathers the step before.
// RUN: rnn-opt %s --convert-rnn-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @grads
// CHECK: %[[G:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[GE:.*]] = tensor.expand_shape %[[G]] {{\[\[}}0], [1, 2, 3]] {{.*}} : tensor<?x8xf32> into tensor<?x1x1x8xf32>
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg1
// CHECK: %[[XE:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] {{.*}} : tensor<?x3xf32> into tensor<?x1x3xf32>
// CHECK-NOT: tensor<8x?xf32>
// CHECK: %[[DW:.*]] = linalg.generic {{.*}} ins(%[[GE]], %[[XE]] : tensor<?x1x1x8xf32>, tensor<?x1x3xf32>) outs(%{{.*}} : tensor<1x1x8x3xf32>) attrs = {rnn.headwise_gemm = 2 : i32}
// CHECK: tensor.collapse_shape %[[DW]] {{\[\[}}0, 1, 2], [3]] : tensor<1x1x8x3xf32> into tensor<8x3xf32>
// CHECK: %[[ONES:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x?xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[ONES]], %{{.*}} : tensor<1x?xf32>, tensor<?x8xf32>) {{.*}}rnn.gemm_weight_layout = 1
// CHECK: tensor.collapse_shape %[[SUM]] {{\[\[}}0, 1]] : tensor<1x8xf32> into tensor<8xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<?x?x8xf32>) outs(%{{.*}} : tensor<?x?x1xf32>)
// CHECK-NOT: rnn.gemm_weight_layout
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg3 : tensor<?x4xf32>) outs(%{{.*}} : tensor<?x?x4xf32>)
// CHECK: tensor.extract %arg2
// CHECK: arith.select
func.func @grads(%g: tensor<?x?x8xf32>, %x: tensor<?x?x3xf32>, %h: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>)
    -> (tensor<8x3xf32>, tensor<8xf32>, tensor<?x?x1xf32>, tensor<?x?x4xf32>) {
  %dw = rnn.outer_sum %g, %x : tensor<?x?x8xf32>, tensor<?x?x3xf32> -> tensor<8x3xf32>
  %db = rnn.sum_to %g : tensor<?x?x8xf32> -> tensor<8xf32>
  %dr = rnn.sum_to %g : tensor<?x?x8xf32> -> tensor<?x?x1xf32>
  %hp = rnn.previous_states %h, %h0 : tensor<?x?x4xf32>, tensor<?x4xf32>
  return %dw, %db, %dr, %hp : tensor<8x3xf32>, tensor<8xf32>, tensor<?x?x1xf32>, tensor<?x?x4xf32>
}

// A bf16 input sums in f32: ones of bf16 times the rows into an f32 row
// (the GEMM accumulates in f32); a sum to a row statistic extends each
// element before adding it.
// CHECK-LABEL: func.func @grads16
// CHECK: %[[ONES16:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%{{.*}} : tensor<1x?xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[ONES16]], %{{.*}} : tensor<1x?xbf16>, tensor<?x8xbf16>) outs(%{{.*}} : tensor<1x8xf32>) {{.*}}rnn.gemm_weight_layout = 1
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<?x?x8xbf16>) outs(%{{.*}} : tensor<?x?x1xf32>)
// CHECK: ^bb0(%[[IN:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK: %[[WIDE:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: arith.addf %[[ACC]], %[[WIDE]] : f32
func.func @grads16(%g: tensor<?x?x8xbf16>) -> (tensor<8xf32>, tensor<?x?x1xf32>) {
  %db = rnn.sum_to %g : tensor<?x?x8xbf16> -> tensor<8xf32>
  %dr = rnn.sum_to %g : tensor<?x?x8xbf16> -> tensor<?x?x1xf32>
  return %db, %dr : tensor<8xf32>, tensor<?x?x1xf32>
}

// The previous states rounded for a bf16 weight gradient: the gathering
// generic rounds what it yields and writes bf16 (one kernel, not a gather
// in f32 and a cast reading it back). With a second reader of the f32
// states, the two stay apart.
// CHECK-LABEL: func.func @rounded_previous_states
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?x4xbf16>)
// CHECK: tensor.extract %arg0
// CHECK: arith.select
// CHECK: %[[V:.*]] = arith.select
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @read_twice
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?x4xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?x4xbf16>)
func.func @rounded_previous_states(%h: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>) -> tensor<?x?x4xbf16> {
  %hp = rnn.previous_states %h, %h0 : tensor<?x?x4xf32>, tensor<?x4xf32>
  %r = rnn.cast %hp : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  return %r : tensor<?x?x4xbf16>
}
func.func @read_twice(%h: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>) -> (tensor<?x?x4xbf16>, tensor<?x?x4xf32>) {
  %hp = rnn.previous_states %h, %h0 : tensor<?x?x4xf32>, tensor<?x4xf32>
  %r = rnn.cast %hp : tensor<?x?x4xf32> to tensor<?x?x4xbf16>
  return %r, %hp : tensor<?x?x4xbf16>, tensor<?x?x4xf32>
}
