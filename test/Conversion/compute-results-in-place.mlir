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
