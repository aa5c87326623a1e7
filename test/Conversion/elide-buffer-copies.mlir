// RUN: rnn-opt %s -split-input-file --elide-buffer-copies | FileCheck %s

// The state h of row t is read while the step writes row t + 1 of the same
// sequence: disjoint rows, so the step reads the row itself.
// CHECK-LABEL: func.func @neighbouring_rows
// CHECK-NOT: memref.copy
// CHECK: %[[PREV:.*]] = memref.subview %[[SEQ:.*]][%[[T:.*]], 0, 0]
// CHECK: %[[NEXT:.*]] = memref.subview %[[SEQ]]
// CHECK: linalg.generic {{.*}} ins(%[[PREV]] : {{.*}}) outs(%[[NEXT]] :
func.func @neighbouring_rows(%t: index, %n: index) -> memref<?x4x8xf32> {
  %c1 = arith.constant 1 : index
  %seq = memref.alloc(%n) : memref<?x4x8xf32>
  %prev = memref.subview %seq[%t, 0, 0] [1, 4, 8] [1, 1, 1] : memref<?x4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
  %copy = memref.alloc() : memref<4x8xf32>
  memref.copy %prev, %copy : memref<4x8xf32, strided<[8, 1], offset: ?>> to memref<4x8xf32>
  %t1 = arith.addi %t, %c1 : index
  %next = memref.subview %seq[%t1, 0, 0] [1, 4, 8] [1, 1, 1] : memref<?x4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%copy : memref<4x8xf32>) outs(%next : memref<4x8xf32, strided<[8, 1], offset: ?>>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  }
  return %seq : memref<?x4x8xf32>
}

// -----

// Writing the row that was copied keeps the copy.
// CHECK-LABEL: func.func @same_row
// CHECK: memref.copy
func.func @same_row(%t: index, %n: index) -> memref<?x4x8xf32> {
  %seq = memref.alloc(%n) : memref<?x4x8xf32>
  %row = memref.subview %seq[%t, 0, 0] [1, 4, 8] [1, 1, 1] : memref<?x4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: ?>>
  %copy = memref.alloc() : memref<4x8xf32>
  memref.copy %row, %copy : memref<4x8xf32, strided<[8, 1], offset: ?>> to memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%copy : memref<4x8xf32>) outs(%row : memref<4x8xf32, strided<[8, 1], offset: ?>>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  }
  return %seq : memref<?x4x8xf32>
}

// -----

// A result copied into a temporary and then into the caller's buffer is
// copied once, straight from the source.
// CHECK-LABEL: func.func @copy_chain
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x4xf32>
// CHECK: %[[SRC:.*]] = memref.subview
// CHECK-NEXT: memref.copy %[[SRC]], %[[OUT]]
// CHECK-NOT: memref.copy
func.func @copy_chain(%n: index, %out: memref<?x4xf32>) {
  %seq = memref.alloc(%n) : memref<?x4xf32>
  %m = arith.subi %n, %n : index
  %src = memref.subview %seq[1, 0] [%n, 4] [1, 1] : memref<?x4xf32> to memref<?x4xf32, strided<[4, 1], offset: 4>>
  %tmp = memref.alloc(%n) : memref<?x4xf32>
  memref.copy %src, %tmp : memref<?x4xf32, strided<[4, 1], offset: 4>> to memref<?x4xf32>
  memref.copy %tmp, %out : memref<?x4xf32> to memref<?x4xf32>
  return
}

// -----

// A call may write anything: the copy stays.
// CHECK-LABEL: func.func @unknown_writer
// CHECK: memref.copy
// CHECK: call @opaque
func.func private @opaque()
func.func @unknown_writer(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %tmp = memref.alloc() : memref<4xf32>
  memref.copy %a, %tmp : memref<4xf32> to memref<4xf32>
  call @opaque() : () -> ()
  %v = memref.load %tmp[%c0] : memref<4xf32>
  return %v : f32
}
