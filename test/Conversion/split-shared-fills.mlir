// RUN: rnn-opt %s -split-input-file --split-shared-fills | FileCheck %s
// RUN: rnn-opt %s -split-input-file --split-shared-fills --split-shared-fills | FileCheck %s

#rows = affine_map<(n, k, r) -> (r, n)>
#cols = affine_map<(n, k, r) -> (r, k)>
#out = affine_map<(n, k, r) -> (n, k)>

// Two products start from one zero fill (CSE merged theirs): each gets a
// fill of its own, of a tensor.empty of its own, right before it; the
// shared one goes.
// CHECK-LABEL: func.func @two_products
// CHECK-NOT: linalg.fill
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<8x4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F1]] : tensor<8x4xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<8x4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F2]] : tensor<8x4xf32>)
// CHECK-NOT: linalg.fill
func.func @two_products(%d: tensor<?x8xf32>, %x: tensor<?x4xf32>, %h: tensor<?x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %a = linalg.generic {indexing_maps = [#rows, #cols, #out],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%d, %x : tensor<?x8xf32>, tensor<?x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %b = linalg.generic {indexing_maps = [#rows, #cols, #out],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%d, %h : tensor<?x8xf32>, tensor<?x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %a, %b : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

#id = affine_map<(n, k) -> (n, k)>

// A fill that one op writes into and another reads (returned): the writer
// gets its own, the original stays for the reader. A fill of a buffer that
// is not a tensor.empty is cloned onto the same destination.
// CHECK-LABEL: func.func @writer_and_reader
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%arg0 : tensor<8x4xf32>)
// CHECK: %[[OWN:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%arg0 : tensor<8x4xf32>)
// CHECK-NEXT: %[[W:.*]] = linalg.generic {{.*}} outs(%[[OWN]] : tensor<8x4xf32>)
// CHECK: return %[[W]], %[[F]]
func.func @writer_and_reader(%t: tensor<8x4xf32>, %x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%t : tensor<8x4xf32>) -> tensor<8x4xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %w, %f : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

#id = affine_map<(n, k) -> (n, k)>

// One writer, or readers alone: nothing to split.
// CHECK-LABEL: func.func @unshared
// CHECK-COUNT-2: linalg.fill
// CHECK-NOT: linalg.fill
func.func @unshared(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %g = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %w, %g, %g : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
