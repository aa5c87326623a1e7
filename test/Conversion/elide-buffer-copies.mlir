// RUN: rnn-opt %s -split-input-file --elide-buffer-copies | FileCheck %s --check-prefixes=CHECK,DEFAULT
// RUN: rnn-opt %s -split-input-file --elide-buffer-copies=distinct-arguments | FileCheck %s --check-prefixes=CHECK,DISTINCT

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

// -----

// The other way round: two pieces that one generic computes into buffers of
// their own, each copied into its columns of a wide buffer, are computed in
// those columns (the target views move up to the generic); the buffers and
// the copies go away.
// CHECK-LABEL: func.func @forward_pieces
// CHECK-NOT: memref.copy
// CHECK: %[[WIDE:.*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>
// CHECK-NEXT: %[[P0:.*]] = memref.subview %[[WIDE]][0, 0]
// CHECK-NEXT: %[[P1:.*]] = memref.subview %[[WIDE]][0, 4]
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[P0]], %[[P1]] :
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: return %[[WIDE]]
func.func @forward_pieces(%n: index, %x: memref<?x4xf32>) -> memref<?x8xf32> {
  %wide = memref.alloc(%n) : memref<?x8xf32>
  %a = memref.alloc(%n) : memref<?x4xf32>
  %b = memref.alloc(%n) : memref<?x4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x4xf32>) outs(%a, %b : memref<?x4xf32>, memref<?x4xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %t = math.tanh %in : f32
    linalg.yield %in, %t : f32, f32
  }
  %p0 = memref.subview %wide[0, 0] [%n, 4] [1, 1] : memref<?x8xf32> to memref<?x4xf32, strided<[8, 1]>>
  memref.copy %a, %p0 : memref<?x4xf32> to memref<?x4xf32, strided<[8, 1]>>
  %p1 = memref.subview %wide[0, 4] [%n, 4] [1, 1] : memref<?x8xf32> to memref<?x4xf32, strided<[8, 1], offset: 4>>
  memref.copy %b, %p1 : memref<?x4xf32> to memref<?x4xf32, strided<[8, 1], offset: 4>>
  return %wide : memref<?x8xf32>
}

// -----

// The target is read between the generic and the copy (it must still hold
// its old values there): the copy stays.
// CHECK-LABEL: func.func @forward_target_read
// CHECK: linalg.generic {{.*}} outs(%[[A:[^ ]*]] : memref<?x4xf32>)
// CHECK: memref.load
// CHECK: memref.copy %[[A]]
func.func @forward_target_read(%n: index, %x: memref<?x4xf32>) -> (memref<?x4xf32>, f32) {
  %c0 = arith.constant 0 : index
  %target = memref.alloc(%n) : memref<?x4xf32>
  %a = memref.alloc(%n) : memref<?x4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x4xf32>) outs(%a : memref<?x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  }
  %old = memref.load %target[%c0, %c0] : memref<?x4xf32>
  memref.copy %a, %target : memref<?x4xf32> to memref<?x4xf32>
  return %target, %old : memref<?x4xf32>, f32
}

// -----

// The source is read after the copy: the copy stays.
// CHECK-LABEL: func.func @forward_read_after
// CHECK: memref.copy
func.func @forward_read_after(%n: index, %x: memref<?x4xf32>, %y: memref<?x4xf32>) -> memref<?x4xf32> {
  %a = memref.alloc(%n) : memref<?x4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x4xf32>) outs(%a : memref<?x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  }
  %target = memref.alloc(%n) : memref<?x4xf32>
  memref.copy %a, %target : memref<?x4xf32> to memref<?x4xf32>
  memref.copy %a, %y : memref<?x4xf32> to memref<?x4xf32>
  return %target : memref<?x4xf32>
}

// -----

// The generic reads one function argument and the copy writes into
// another: only with distinct-arguments are the two known not to overlap.
// A state carried by a loop counts as the buffers that enter the loop and
// that it yields (here allocations), so it overlaps neither.
// CHECK-LABEL: func.func @forward_arguments
// DEFAULT: linalg.generic {{.*}} outs(%[[A:[^ ]*]] : memref<?x4xf32>)
// DEFAULT: memref.copy %[[A]]
// DISTINCT: %[[ROW:.*]] = memref.subview %arg2
// DISTINCT-NEXT: %[[P1:.*]] = memref.subview %[[ROW]][0, 4]
// DISTINCT-NEXT: linalg.generic {{.*}} outs(%[[P1]] :
// DISTINCT-NOT: memref.copy
// CHECK: scf.yield
func.func @forward_arguments(%n: index, %x: memref<?x?x4xf32>, %ys: memref<?x?x8xf32>, %h0: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc(%n) : memref<?x4xf32>
  %last = scf.for %t = %c0 to %n step %c1 iter_args(%h = %init) -> (memref<?x4xf32>) {
    %xt = memref.subview %x[%t, 0, 0] [1, %n, 4] [1, 1, 1] : memref<?x?x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    %a = memref.alloc(%n) : memref<?x4xf32>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%xt, %h : memref<?x4xf32, strided<[4, 1], offset: ?>>, memref<?x4xf32>) outs(%a : memref<?x4xf32>) {
    ^bb0(%in: f32, %s: f32, %o: f32):
      %m = arith.mulf %in, %s : f32
      linalg.yield %m : f32
    }
    %row = memref.subview %ys[%t, 0, 0] [1, %n, 8] [1, 1, 1] : memref<?x?x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
    %p1 = memref.subview %row[0, 4] [%n, 4] [1, 1] : memref<?x8xf32, strided<[8, 1], offset: ?>> to memref<?x4xf32, strided<[8, 1], offset: ?>>
    memref.copy %a, %p1 : memref<?x4xf32> to memref<?x4xf32, strided<[8, 1], offset: ?>>
    %next = memref.alloc(%n) : memref<?x4xf32>
    scf.yield %next : memref<?x4xf32>
  }
  return
}
