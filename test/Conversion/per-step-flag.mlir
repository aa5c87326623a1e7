// RUN: rnn-opt %s --convert-matmul-to-library-gemm='function=rnn_cuda_gemm per-step-flag' | FileCheck %s
// RUN: rnn-opt %s --convert-matmul-to-library-gemm='function=rnn_cuda_gemm' | FileCheck %s --check-prefix=OFF

// per-step-flag adds 16 (RNN_GEMM_PER_STEP) to b_layout for a product
// inside a loop, which runs once per time step: the CUDA runtime's graph
// tuning tries cuBLASLt's other algorithms for those. The input projection,
// hoisted out of the loop, runs once and keeps its flags.

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// CHECK-LABEL: func.func @projection_and_step
// The projection, before the loop: layout 0, nothing added.
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
// CHECK: scf.for
// The step's product: 0 + 16, and + 4 where it accumulates onto the gates.
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c20_i32,
// CHECK: }
// OFF-LABEL: func.func @projection_and_step
// OFF: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
// OFF: scf.for
// OFF: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c4_i32,
func.func @projection_and_step(%x: memref<12x3xf32>, %w: memref<8x3xf32>, %u: memref<8x8xf32>,
                               %h: memref<4x8xf32>, %gates: memref<12x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  linalg.fill ins(%zero : f32) outs(%gates : memref<12x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<12x3xf32>, memref<8x3xf32>) outs(%gates : memref<12x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  scf.for %t = %c0 to %c3 step %c1 {
    %row = arith.muli %t, %c3 : index
    %step = memref.subview %gates[%row, 0] [4, 8] [1, 1] : memref<12x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
    linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%h, %u : memref<4x8xf32>, memref<8x8xf32>) outs(%step : memref<4x8xf32, strided<[8, 1], offset: ?>>)
        attrs = {rnn.gemm_weight_layout = 0 : i32} {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    }
  }
  return
}
