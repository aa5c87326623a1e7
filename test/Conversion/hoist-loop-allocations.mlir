// RUN: rnn-opt %s -split-input-file --hoist-loop-allocations | FileCheck %s

// The recurrent GEMM's result buffer, allocated and freed every step with a
// loop-invariant size, is allocated once around the loop.
// CHECK-LABEL: func.func @scratch
// CHECK: %[[BUF:.*]] = memref.alloc(%arg1) : memref<?x16xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[BUF]]
func.func @scratch(%steps: index, %batch: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %t = %c0 to %steps step %c1 {
    %buf = memref.alloc(%batch) : memref<?x16xf32>
    memref.store %v, %buf[%c0, %c0] : memref<?x16xf32>
    memref.dealloc %buf : memref<?x16xf32>
  }
  return
}

// -----

// A size the step reads off a buffer defined before the loop (the batch of
// a sequence argument) moves before the loop with the allocation; one
// computed from the step index does not.
// CHECK-LABEL: func.func @size_in_the_step
// CHECK: %[[B:.*]] = memref.dim %arg1, %c1
// CHECK-NEXT: %[[BUF:.*]] = memref.alloc(%[[B]]) : memref<?x16xf32>
// CHECK-NEXT: scf.for %[[T:.*]] = 
// CHECK: %[[N:.*]] = arith.addi %[[T]], %[[B2:.*]]
// CHECK-NEXT: memref.alloc(%[[N]]) : memref<?xf32>
// CHECK: memref.dealloc
// CHECK-NOT: memref.alloc
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[BUF]]
func.func @size_in_the_step(%steps: index, %xs: memref<?x?x16xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %t = %c0 to %steps step %c1 {
    %b = memref.dim %xs, %c1 : memref<?x?x16xf32>
    %buf = memref.alloc(%b) : memref<?x16xf32>
    memref.store %v, %buf[%c0, %c0] : memref<?x16xf32>
    memref.dealloc %buf : memref<?x16xf32>
    %b2 = memref.dim %xs, %c1 : memref<?x?x16xf32>
    %n = arith.addi %t, %b2 : index
    %growing = memref.alloc(%n) : memref<?xf32>
    memref.dealloc %growing : memref<?xf32>
  }
  return
}

// -----

// A size that changes with the iteration, and a buffer that the loop
// yields, stay where they are.
// CHECK-LABEL: func.func @stays
// CHECK: scf.for
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.dealloc
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: scf.yield
func.func @stays(%steps: index, %init: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %t = %c0 to %steps step %c1 iter_args(%carried = %init) -> memref<4xf32> {
    %growing = memref.alloc(%t) : memref<?xf32>
    memref.dealloc %growing : memref<?xf32>
    %next = memref.alloc() : memref<4xf32>
    scf.yield %next : memref<4xf32>
  }
  return %r : memref<4xf32>
}
