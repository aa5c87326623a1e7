// RUN: rnn-opt %s -split-input-file --convert-matmul-to-library-gemm='function=rnn_cuda_gemm constant-b-flag' | FileCheck %s
// RUN: rnn-opt %s -split-input-file --convert-matmul-to-library-gemm='function=rnn_cuda_gemm' | FileCheck %s --check-prefix=OFF

// constant-b-flag adds 8 (RNN_GEMM_B_CONSTANT) to b_layout when B is a
// function argument, or a view of one, that nothing in the function writes:
// the CUDA runtime then packs such a weight once per call. Each output is
// zero-filled first, so the calls overwrite it (no accumulate bit). Only
// functions that nothing in the module calls qualify.

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// A weight argument, only read: 0 + 8.
// CHECK-LABEL: func.func @weight_argument
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c8_i32,
// OFF-LABEL: func.func @weight_argument
// OFF: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
func.func @weight_argument(%x: memref<?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x8xf32>)
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
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// A view of an argument (the rows of one gate of a packed weight): still
// constant.
// CHECK-LABEL: func.func @weight_view
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c8_i32,
func.func @weight_view(%x: memref<?x3xf32>, %w: memref<16x3xf32>, %y: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %rows = memref.subview %w[8, 0] [8, 3] [1, 1] : memref<16x3xf32> to memref<8x3xf32, strided<[3, 1], offset: 24>>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %rows : memref<?x3xf32>, memref<8x3xf32, strided<[3, 1], offset: 24>>) outs(%y : memref<?x8xf32>)
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
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// Written through a view after the product (by a copy): not constant.
// CHECK-LABEL: func.func @written_through_view
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
func.func @written_through_view(%x: memref<?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x8xf32>, %src: memref<3xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  %row = memref.subview %w[2, 0] [1, 3] [1, 1] : memref<8x3xf32> to memref<3xf32, strided<[1], offset: 6>>
  memref.copy %src, %row : memref<3xf32> to memref<3xf32, strided<[1], offset: 6>>
  return
}

// -----

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// Filled by the function itself (an output buffer used as B): not constant.
// CHECK-LABEL: func.func @filled_argument
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
func.func @filled_argument(%x: memref<?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%w : memref<8x3xf32>)
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x8xf32>)
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
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// Passed to a call, which may write it: not constant.
// CHECK-LABEL: func.func @escapes_to_call
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
func.func private @update(memref<8x3xf32>)
func.func @escapes_to_call(%x: memref<?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  func.call @update(%w) : (memref<8x3xf32>) -> ()
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x8xf32>)
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
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// A buffer the function computes (LSTMP's carried product): not an
// argument, not constant.
// CHECK-LABEL: func.func @computed_weight
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
func.func @computed_weight(%x: memref<?x3xf32>, %y: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = memref.alloc() : memref<8x3xf32>
  linalg.fill ins(%zero : f32) outs(%w : memref<8x3xf32>)
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %w : memref<8x3xf32>
  return
}

// -----

#in = affine_map<(b, n, k) -> (b, k)>
#w = affine_map<(b, n, k) -> (n, k)>
#out = affine_map<(b, n, k) -> (b, n)>

// A function that another one calls: its caller may write the weight before
// the call (here it fills it), so it is not constant for the model call.
// CHECK-LABEL: func.func @called
// CHECK: call @rnn_cuda_gemm(%{{[^,]*}}, %{{[^,]*}}, %c0_i32{{[_0-9]*}},
// CHECK-LABEL: func.func @caller
func.func @called(%x: memref<?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3xf32>, memref<8x3xf32>) outs(%y : memref<?x8xf32>)
      attrs = {rnn.gemm_weight_layout = 0 : i32} {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @caller(%x: memref<?x3xf32>, %w: memref<8x3xf32>, %y: memref<?x8xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%w : memref<8x3xf32>)
  func.call @called(%x, %w, %y) : (memref<?x3xf32>, memref<8x3xf32>, memref<?x8xf32>) -> ()
  return
}
