// RUN: rnn-opt %s -split-input-file --convert-rnn-to-linalg | FileCheck %s
// Bufferized as rnn-compile does (up to elide-buffer-copies, whose copies of
// identical views cse and canonicalize then fold): every piece is computed
// in its columns of the caller's buffer, with no buffer or copy of its own.
// RUN: rnn-opt %s -split-input-file --pass-pipeline='builtin.module(convert-rnn-to-linalg,canonicalize,cse,eliminate-empty-tensors,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops},canonicalize,buffer-results-to-out-params{modify-public-functions},compute-results-in-place,canonicalize,elide-buffer-copies{distinct-arguments},cse,canonicalize)' | FileCheck %s --check-prefix=BUF

// A result of 4 pieces is one wide tensor.empty; the generic computes each
// piece into an extract_slice of its columns, and insert_slices of the same
// columns put the pieces back, in order. The narrow result has a tensor of
// its own.
// CHECK-LABEL: func.func @wide_result
// CHECK: %[[W:.*]] = tensor.empty(%{{.*}}) : tensor<?x16xf32>
// CHECK: %[[P0:.*]] = tensor.extract_slice %[[W]][0, 0] [%{{.*}}, 4] [1, 1] : tensor<?x16xf32> to tensor<?x4xf32>
// CHECK: %[[P1:.*]] = tensor.extract_slice %[[W]][0, 4] [%{{.*}}, 4] [1, 1]
// CHECK: %[[P2:.*]] = tensor.extract_slice %[[W]][0, 8] [%{{.*}}, 4] [1, 1]
// CHECK: %[[P3:.*]] = tensor.extract_slice %[[W]][0, 12] [%{{.*}}, 4] [1, 1]
// CHECK: %[[N:.*]] = tensor.empty(%{{.*}}) : tensor<?x4xf32>
// CHECK: %[[G:.*]]:5 = linalg.generic {{.*}} outs(%[[P0]], %[[P1]], %[[P2]], %[[P3]], %[[N]] :
// CHECK: %[[A:.*]] = arith.mulf
// CHECK-NEXT: %[[B:.*]] = arith.mulf
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[A]]
// CHECK-NEXT: %[[U:.*]] = arith.subf %[[T]], %[[B]]
// CHECK-NEXT: %[[V:.*]] = arith.addf %[[U]]
// CHECK-NEXT: linalg.yield %[[A]], %[[B]], %[[T]], %[[U]], %[[V]]
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[G]]#0 into %[[W]][0, 0] [%{{.*}}, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[G]]#1 into %[[I0]][0, 4]
// CHECK: %[[I2:.*]] = tensor.insert_slice %[[G]]#2 into %[[I1]][0, 8]
// CHECK: %[[I3:.*]] = tensor.insert_slice %[[G]]#3 into %[[I2]][0, 12]
// CHECK: return %[[I3]], %[[G]]#4 : tensor<?x16xf32>, tensor<?x4xf32>

// BUF-LABEL: func.func @wide_result
// BUF-SAME: %[[OUT:[^:]*]]: memref<?x16xf32>, %[[NARROW:[^:]*]]: memref<?x4xf32>)
// BUF-NOT: memref.alloc
// BUF-DAG: %[[P0:.*]] = memref.subview %[[OUT]][0, 0] [%{{.*}}, 4] [1, 1]
// BUF-DAG: %[[P1:.*]] = memref.subview %[[OUT]][0, 4] [%{{.*}}, 4] [1, 1]
// BUF-DAG: %[[P2:.*]] = memref.subview %[[OUT]][0, 8] [%{{.*}}, 4] [1, 1]
// BUF-DAG: %[[P3:.*]] = memref.subview %[[OUT]][0, 12] [%{{.*}}, 4] [1, 1]
// BUF: linalg.generic {{.*}} outs(%[[P0]], %[[P1]], %[[P2]], %[[P3]], %[[NARROW]] :
// BUF-NOT: memref.copy
// BUF: return
func.func @wide_result(%g: tensor<?x8xf32>, %d: tensor<?x4xf32>) -> (tensor<?x16xf32>, tensor<?x4xf32>) {
  %w, %n = rnn.pointwise(%g, %g[4], %d) : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x16xf32> pieces 4, tensor<?x4xf32> {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %a = arith.mulf %x, %z : f32
    %b = arith.mulf %y, %z : f32
    %t = math.tanh %a : f32
    %u = arith.subf %t, %b : f32
    %v = arith.addf %u, %z : f32
    rnn.pointwise_yield %a, %b, %t, %u, %v : f32, f32, f32, f32, f32
  }
  return %w, %n : tensor<?x16xf32>, tensor<?x4xf32>
}

// -----

// With a row reduction, each piece is computed by the phase it belongs to,
// into its columns: the read itself and the sum in the first phase, the
// normalised value after the reduction. A later phase and the reduction
// read a piece where it was computed.
// CHECK-LABEL: func.func @wide_phases
// CHECK: %[[W:.*]] = tensor.empty(%{{.*}}) : tensor<?x12xf32>
// CHECK: %[[P0:.*]] = tensor.extract_slice %[[W]][0, 0]
// CHECK: %[[P1:.*]] = tensor.extract_slice %[[W]][0, 4]
// CHECK: %[[G:.*]]:2 = linalg.generic {{.*}} outs(%[[P0]], %[[P1]] :
// CHECK-SAME: rnn.row_group = 0
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[G]]#1 :
// CHECK: %[[P2:.*]] = tensor.extract_slice %[[W]][0, 8]
// CHECK: %[[N:.*]] = linalg.generic {{.*}} ins(%[[G]]#1, %[[SUM]] : {{.*}} outs(%[[P2]] :
// CHECK-SAME: rnn.row_group = 0
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[G]]#0 into %[[W]][0, 0]
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[G]]#1 into %[[I0]][0, 4]
// CHECK: %[[I2:.*]] = tensor.insert_slice %[[N]] into %[[I1]][0, 8]
// CHECK: return %[[I2]]

// BUF-LABEL: func.func @wide_phases
// BUF-SAME: %[[OUT:[^:]*]]: memref<?x12xf32>)
// BUF-DAG: %[[P0:.*]] = memref.subview %[[OUT]][0, 0]
// BUF-DAG: %[[P1:.*]] = memref.subview %[[OUT]][0, 4]
// BUF: linalg.generic {{.*}} outs(%[[P0]], %[[P1]] :
// BUF: %[[SUM:.*]] = memref.alloc({{.*}}) {{.*}} : memref<?x1xf32>
// BUF: linalg.generic {{.*}} ins(%[[P1]] : {{.*}} outs(%[[SUM]] :
// BUF: %[[P2:.*]] = memref.subview %[[OUT]][0, 8]
// BUF: linalg.generic {{.*}} ins(%[[P1]], %[[SUM]] : {{.*}} outs(%[[P2]] :
// BUF-NOT: memref.copy
// BUF: return
func.func @wide_phases(%x: tensor<?x8xf32>) -> tensor<?x12xf32> {
  %r = rnn.pointwise(%x, %x[4]) : tensor<?x8xf32> -> tensor<?x12xf32> pieces 3 {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    %sum = rnn.row_sum %s : f32
    %n = arith.divf %s, %sum : f32
    rnn.pointwise_yield %b, %s, %n : f32, f32, f32
  }
  return %r : tensor<?x12xf32>
}

// -----

// In a scan, the pieces of a wide cell output are computed straight into
// their columns of the output sequence's row, which the matmul of the same
// step then reads: no buffer of the step's own, no copy.
// CHECK-LABEL: func.func @grads_seq
// CHECK: scf.for
// CHECK: tensor.empty({{.*}}) : tensor<?x8xf32>
// CHECK: linalg.generic
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice

// The state, a matmul's result, is updated in place in the caller's
// final-state buffer: the zero fill and the GEMM write it, no buffer per step.
// BUF-LABEL: func.func @grads_seq
// BUF-SAME: %[[YS:[^:]*]]: memref<?x?x8xf32>, %[[HT:[^:]*]]: memref<?x4xf32>)
// BUF: scf.for
// BUF-NOT: memref.alloc
// BUF: %[[ROW:.*]] = memref.subview %[[YS]][%{{.*}}, 0, 0] [1, %{{.*}}, 8] [1, 1, 1]
// BUF-DAG: %[[P0:.*]] = memref.subview %[[ROW]][0, 0] [%{{.*}}, 4] [1, 1]
// BUF-DAG: %[[P1:.*]] = memref.subview %[[ROW]][0, 4] [%{{.*}}, 4] [1, 1]
// BUF: linalg.generic {{.*}} outs(%[[P0]], %[[P1]] :
// BUF: linalg.fill ins(%{{.*}} : f32) outs(%[[HT]] :
// BUF: linalg.generic {{.*}} ins(%[[ROW]], %{{.*}} : {{.*}} outs(%[[HT]] : {{.*}}rnn.gemm_weight_layout = 1
// BUF-NOT: memref.copy
// BUF-NOT: memref.alloc
// BUF: return
rnn.cell @grads inputs(%x: tensor<?x4xf32>) states(%h: tensor<?x4xf32>)
    params(%U: tensor<8x4xf32>) -> (tensor<?x8xf32>) {
  %w = rnn.pointwise(%x, %h) : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32> pieces 2 {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    %t = math.tanh %p : f32
    rnn.pointwise_yield %p, %t : f32, f32
  }
  %m = rnn.matmul %w, %U weight_in_out : tensor<?x8xf32>, tensor<8x4xf32> -> tensor<?x4xf32>
  rnn.yield outputs(%w : tensor<?x8xf32>) states(%m : tensor<?x4xf32>)
}
func.func @grads_seq(%xs: tensor<?x?x4xf32>, %h0: tensor<?x4xf32>, %U: tensor<8x4xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x4xf32>) {
  %ys, %hT = rnn.scan @grads reverse inputs(%xs : tensor<?x?x4xf32>) init(%h0 : tensor<?x4xf32>)
      params(%U : tensor<8x4xf32>) -> outputs(tensor<?x?x8xf32>) states(tensor<?x4xf32>)
  return %ys, %hT : tensor<?x?x8xf32>, tensor<?x4xf32>
}

// -----

// A concatenation is one tensor.concat, which bufferizes in one step (a
// chain of insert_slices made empty-tensor elimination and bufferization
// take time growing as n^3.7 in the number of pieces). Pieces that are
// arguments are copied into their rows of the caller's buffer.
// CHECK-LABEL: func.func @pack
// CHECK-NOT: tensor.insert_slice
// CHECK: %[[P:.*]] = tensor.concat dim(0) %arg0, %arg1, %arg2 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<10x8xf32>
// CHECK-NEXT: return %[[P]]

// BUF-LABEL: func.func @pack
// BUF-SAME: %[[A:[^:]*]]: memref<4x8xf32>, %[[B:[^:]*]]: memref<4x8xf32>, %[[C:[^:]*]]: memref<2x8xf32>, %[[OUT:[^:]*]]: memref<10x8xf32>)
// BUF-NOT: memref.alloc
// BUF: %[[S0:.*]] = memref.subview %[[OUT]][0, 0] [4, 8] [1, 1]
// BUF-NEXT: memref.copy %[[A]], %[[S0]]
// BUF-NEXT: %[[S1:.*]] = memref.subview %[[OUT]][4, 0] [4, 8] [1, 1]
// BUF-NEXT: memref.copy %[[B]], %[[S1]]
// BUF-NEXT: %[[S2:.*]] = memref.subview %[[OUT]][8, 0] [2, 8] [1, 1]
// BUF-NEXT: memref.copy %[[C]], %[[S2]]
// BUF-NEXT: return
func.func @pack(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<2x8xf32>) -> tensor<10x8xf32> {
  %p = rnn.concat %a, %b, %c axis 0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<10x8xf32>
  return %p : tensor<10x8xf32>
}

// -----

// Pieces that are computed are computed in their columns of the result
// (elide-buffer-copies moves them there): no buffer of their own, no copy.
// CHECK-LABEL: func.func @computed_pieces
// CHECK: %[[T:.*]] = linalg.generic
// CHECK: %[[S:.*]] = linalg.generic
// CHECK: %[[P:.*]] = tensor.concat dim(1) %[[T]], %[[S]] : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: return %[[P]]

// BUF-LABEL: func.func @computed_pieces
// BUF-SAME: %[[OUT:[^:]*]]: memref<?x8xf32>)
// BUF-NOT: memref.alloc
// BUF: %[[S0:.*]] = memref.subview %[[OUT]][0, 0] [%{{.*}}, 4] [1, 1]
// BUF: linalg.generic {{.*}} outs(%[[S0]] :
// BUF: %[[S1:.*]] = memref.subview %[[OUT]][0, 4] [%{{.*}}, 4] [1, 1]
// BUF: linalg.generic {{.*}} outs(%[[S1]] :
// BUF-NOT: memref.copy
// BUF: return
func.func @computed_pieces(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x8xf32> {
  %t = rnn.tanh %x : tensor<?x4xf32>
  %s = rnn.sigmoid %y : tensor<?x4xf32>
  %p = rnn.concat %t, %s : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  return %p : tensor<?x8xf32>
}

// -----

// A value yielded to several places (pieces of two wide results, as the
// GRU's backward hands its gate gradients to the saved gradients and to the
// recurrent product's operand; or a piece and a narrow result of its own, as
// the sLSTM's backward a gate gradient that is also a state's) is written to
// each by the generic that computes it: one more output, no copy.
// CHECK-LABEL: func.func @shared_pieces
// CHECK: %[[G:.*]]:5 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: %[[A:.*]] = arith.mulf
// CHECK-NEXT: %[[B:.*]] = arith.subf
// CHECK-NEXT: %[[C:.*]] = arith.addf
// CHECK-NEXT: linalg.yield %[[A]], %[[B]], %[[C]], %[[A]], %[[B]]
// CHECK-NOT: linalg.generic
// CHECK: return {{.*}}, %[[G]]#4 :
// Bufferized, the narrow result is computed in the caller's buffer.
// BUF-LABEL: func.func @shared_pieces
// BUF-SAME: %[[S:[^:]*]]: memref<?x4xf32>)
// BUF: linalg.generic {{.*}} outs({{.*}}, %[[S]] :
func.func @shared_pieces(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>) {
  %p, %q, %s = rnn.pointwise(%x, %y) : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x8xf32> pieces 2, tensor<?x8xf32> pieces 2, tensor<?x4xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    %d = arith.subf %a, %b : f32
    %c = arith.addf %a, %b : f32
    rnn.pointwise_yield %m, %d, %m, %c, %d : f32, f32, f32, f32, f32
  }
  return %p, %q, %s : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>
}
