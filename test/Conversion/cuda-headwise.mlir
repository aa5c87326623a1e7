// The CUDA pipeline up to the kernel mapping on a head-wise recurrence: the
// head-wise product is not a library GEMM; its contraction becomes a kernel
// with one thread per result element (b, h, g, j), each adding up its own
// K products serially into an element no other thread writes, after a
// kernel that zeroes the result. Correct by construction, not tuned.
// RUN: rnn-opt %s --pass-pipeline="builtin.module(rnn-optimize,rnn-bufferize,convert-matmul-to-library-gemm{function=rnn_cuda_gemm tf32-flag constant-b-flag per-step-flag},convert-buffers-to-gpu,convert-row-groups-to-kernels,convert-row-reductions-to-kernels,func.func(convert-linalg-to-parallel-loops),convert-parallel-loops-to-kernels,canonicalize,cse,sink-views-into-kernels)" | FileCheck %s
// RUN: rnn-compile --target=cuda %s --emit=mlir -o - | FileCheck %s --check-prefix=COMPILED
// REQUIRES: cuda-toolkit

// CHECK-LABEL: func.func @run
// The input projection: one GEMM over the sequence.
// CHECK: call @rnn_cuda_gemm(
// CHECK: scf.for
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[ACC:.*]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x3x2x4xf32>
// CHECK: gpu.launch
// CHECK: %[[R:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] output_shape [2, 3, 4, 4] : memref<2x12x4xf32> into memref<2x3x4x4xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %[[K]]] : memref<?x2x4xf32>
// CHECK: memref.load %[[R]][%{{.*}}, %{{.*}}, %{{.*}}, %[[K]]] : memref<2x3x4x4xf32>
// CHECK: memref.load %[[ACC]]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[ACC]]
// CHECK-NOT: call @rnn_cuda_gemm(

// COMPILED-DAG: gpu.binary @run_kernel
// COMPILED-DAG: gpu.launch_func @run_kernel
rnn.cell @heads inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x8xf32>)
    params(%W: tensor<24x3xf32>, %R: tensor<2x12x4xf32>) -> (tensor<?x8xf32>) {
  %px = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<24x3xf32> -> tensor<?x24xf32>
  %ph = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  %s = rnn.add %px, %ph : tensor<?x24xf32>, tensor<?x24xf32>
  %a, %b, %c = rnn.split %s : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %sa = rnn.sigmoid %a : tensor<?x8xf32>
  %m = rnn.mul %sa, %b : tensor<?x8xf32>, tensor<?x8xf32>
  %n = rnn.add %m, %c : tensor<?x8xf32>, tensor<?x8xf32>
  %t = rnn.tanh %n : tensor<?x8xf32>
  rnn.yield outputs(%t : tensor<?x8xf32>) states(%t : tensor<?x8xf32>)
}
func.func @run(%xs: tensor<?x?x3xf32>, %h0: tensor<?x8xf32>, %W: tensor<24x3xf32>,
               %R: tensor<2x12x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x8xf32>) {
  %ys, %hT = rnn.scan @heads inputs(%xs : tensor<?x?x3xf32>) init(%h0 : tensor<?x8xf32>)
      params(%W, %R : tensor<24x3xf32>, tensor<2x12x4xf32>)
      -> outputs(tensor<?x?x8xf32>) states(tensor<?x8xf32>)
  return %ys, %hT : tensor<?x?x8xf32>, tensor<?x8xf32>
}
