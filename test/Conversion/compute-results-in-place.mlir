// RUN: rnn-opt %s -split-input-file --compute-results-in-place | FileCheck %s

// A result computed in a buffer of the function's own and copied into the
// caller's at the end is computed in the caller's buffer from the start:
// dynamic shapes too (the C ABI checks the result's shape before the call).
// CHECK-LABEL: func.func @sequence
// CHECK-SAME: (%[[X:.*]]: memref<?x4xf32>, %[[OUT:.*]]: memref<?x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: memref.copy %[[X]], %[[OUT]]
// CHECK: linalg.fill {{.*}} outs(%[[OUT]] : memref<?x4xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @sequence(%x: memref<?x4xf32>, %out: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %buf = memref.alloc(%n) : memref<?x4xf32>
  memref.copy %x, %buf : memref<?x4xf32> to memref<?x4xf32>
  linalg.fill ins(%one : f32) outs(%buf : memref<?x4xf32>)
  memref.copy %buf, %out : memref<?x4xf32> to memref<?x4xf32>
  return
}

// -----

// Left alone: the caller's buffer is read before the copy; the buffer is
// read after the copy; the target is not an argument; the types differ.
// CHECK-LABEL: func.func @target_read
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %arg1
// CHECK-LABEL: func.func @read_after
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %arg1
// CHECK-LABEL: func.func @not_an_argument
// CHECK: memref.alloc
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-LABEL: func.func @other_type
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %arg1
func.func @target_read(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %out[%c0] : memref<4xf32>
  %buf = memref.alloc() : memref<4xf32>
  memref.copy %x, %buf : memref<4xf32> to memref<4xf32>
  memref.copy %buf, %out : memref<4xf32> to memref<4xf32>
  return %v : f32
}
func.func @read_after(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %buf = memref.alloc() : memref<4xf32>
  memref.copy %x, %buf : memref<4xf32> to memref<4xf32>
  memref.copy %buf, %out : memref<4xf32> to memref<4xf32>
  %v = memref.load %buf[%c0] : memref<4xf32>
  return %v : f32
}
func.func @not_an_argument(%x: memref<4xf32>) -> memref<4xf32> {
  %buf = memref.alloc() : memref<4xf32>
  memref.copy %x, %buf : memref<4xf32> to memref<4xf32>
  %other = memref.alloc() : memref<4xf32>
  memref.copy %buf, %other : memref<4xf32> to memref<4xf32>
  return %other : memref<4xf32>
}
func.func @other_type(%x: memref<4xf32>, %out: memref<?xf32>) {
  %buf = memref.alloc() : memref<4xf32>
  memref.copy %x, %buf : memref<4xf32> to memref<4xf32>
  memref.copy %buf, %out : memref<4xf32> to memref<?xf32>
  return
}

// -----

// A result that is a collapsed view of the function's buffer (a weight
// gradient computed as [1, 1, N, K]) is computed in the caller's buffer seen
// through the inverse reshape; a collapse that something else reads too is
// left alone.
// CHECK-LABEL: func.func @collapsed
// CHECK-SAME: (%[[X:.*]]: memref<8x3xf32>, %[[OUT:.*]]: memref<8x3xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[OUT]] {{\[\[}}0, 1, 2], [3]] output_shape [1, 1, 8, 3] : memref<8x3xf32> into memref<1x1x8x3xf32>
// CHECK: linalg.fill {{.*}} outs(%[[VIEW]] : memref<1x1x8x3xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-LABEL: func.func @collapse_read_twice
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: memref.copy
func.func @collapsed(%x: memref<8x3xf32>, %out: memref<8x3xf32>) {
  %one = arith.constant 1.0 : f32
  %buf = memref.alloc() : memref<1x1x8x3xf32>
  linalg.fill ins(%one : f32) outs(%buf : memref<1x1x8x3xf32>)
  %flat = memref.collapse_shape %buf [[0, 1, 2], [3]] : memref<1x1x8x3xf32> into memref<8x3xf32>
  memref.copy %flat, %out : memref<8x3xf32> to memref<8x3xf32>
  return
}
func.func @collapse_read_twice(%out: memref<8xf32>, %out2: memref<8xf32>) {
  %one = arith.constant 1.0 : f32
  %buf = memref.alloc() : memref<1x8xf32>
  linalg.fill ins(%one : f32) outs(%buf : memref<1x8xf32>)
  %flat = memref.collapse_shape %buf [[0, 1]] : memref<1x8xf32> into memref<8xf32>
  memref.copy %flat, %out : memref<8xf32> to memref<8xf32>
  memref.copy %flat, %out2 : memref<8xf32> to memref<8xf32>
  return
}
