// RUN: rnn-opt %s -split-input-file --outline-loops='min-ops=4' | FileCheck %s

// Two large loops (the time loops of two scans): each moves into a function
// of its own (internal to the library), called where it was and never
// inlined. Constants are cloned into it, other values from above are its
// arguments, and the scratch buffer that only the loop uses moves along
// with its dealloc. The small loop stays.
// CHECK-LABEL: func.func @stack
// CHECK-SAME: (%[[N:[^:]*]]: index, %[[B:[^:]*]]: index, %[[X:[^:]*]]: memref<?x8xf32>, %[[Y:[^:]*]]: memref<?x8xf32>, %[[V:[^:]*]]: f32)
// CHECK: %[[SHARED:.*]] = memref.alloc(%[[B]]) : memref<?x8xf32>
// CHECK-NEXT: scf.for
// CHECK: call @stack_loop(%[[N]], %[[B]], %[[X]], %[[V]], %[[SHARED]]) {no_inline} : (index, index, memref<?x8xf32>, f32, memref<?x8xf32>) -> ()
// CHECK-NEXT: call @stack_loop_0(%[[N]], %[[SHARED]], %[[Y]]) {no_inline} : (index, memref<?x8xf32>, memref<?x8xf32>) -> ()
// CHECK-NEXT: memref.dealloc %[[SHARED]]
// CHECK-NEXT: return

// CHECK-LABEL: func.func private @stack_loop
// CHECK-SAME: (%[[N:[^:]*]]: index, %[[B:[^:]*]]: index, %[[X:[^:]*]]: memref<?x8xf32>, %[[V:[^:]*]]: f32, %[[SHARED:[^:]*]]: memref<?x8xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK-DAG: arith.constant 0 : index
// CHECK-DAG: arith.constant 1 : index
// CHECK: %[[SCRATCH:.*]] = memref.alloc(%[[B]]) : memref<?x8xf32>
// CHECK-NEXT: scf.for
// CHECK: memref.store %[[V]], %[[SCRATCH]]
// CHECK: memref.copy %[[SCRATCH]], %[[SHARED]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[SCRATCH]]
// CHECK-NEXT: return

// CHECK-LABEL: func.func private @stack_loop_0
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<?x8xf32>)
// CHECK: scf.for
func.func @stack(%n: index, %b: index, %x: memref<?x8xf32>, %y: memref<?x8xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %shared = memref.alloc(%b) : memref<?x8xf32>
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %v, %shared[%c0, %c0] : memref<?x8xf32>
  }
  %scratch = memref.alloc(%b) : memref<?x8xf32>
  scf.for %t = %c0 to %n step %c1 {
    %e = memref.load %x[%t, %c0] : memref<?x8xf32>
    %s = arith.addf %e, %v : f32
    memref.store %v, %scratch[%c0, %c0] : memref<?x8xf32>
    memref.store %s, %scratch[%c1, %c0] : memref<?x8xf32>
    memref.copy %scratch, %shared : memref<?x8xf32> to memref<?x8xf32>
  }
  memref.dealloc %scratch : memref<?x8xf32>
  scf.for %t = %c0 to %n step %c1 {
    %e = memref.load %shared[%t, %c0] : memref<?x8xf32>
    %f = arith.mulf %e, %e : f32
    %g = arith.addf %f, %e : f32
    memref.store %g, %y[%t, %c0] : memref<?x8xf32>
  }
  memref.dealloc %shared : memref<?x8xf32>
  return
}

// -----

// A function with one large loop keeps it: a function of its own would
// gain nothing.
// CHECK-LABEL: func.func @one_loop
// CHECK: scf.for
// CHECK-NOT: call
// CHECK-NOT: func.func private
func.func @one_loop(%n: index, %y: memref<?xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %t = %c0 to %n step %c1 {
    %f = arith.mulf %v, %v : f32
    %g = arith.addf %f, %v : f32
    %h = arith.addf %g, %v : f32
    memref.store %h, %y[%t] : memref<?xf32>
  }
  return
}

// -----

// A loop that yields a value returns it from its function.
// CHECK-LABEL: func.func @results
// CHECK: %[[R:.*]] = call @results_loop(%{{.*}}, %{{.*}}) {no_inline} : (index, f32) -> f32
// CHECK: %[[R2:.*]] = call @results_loop_0(%{{.*}}, %{{.*}}) {no_inline} : (index, f32) -> f32
// CHECK: return %[[R]], %[[R2]]
// CHECK-LABEL: func.func private @results_loop
// CHECK: %[[L:.*]] = scf.for {{.*}} -> (f32)
// CHECK: return %[[L]] : f32
func.func @results(%n: index, %v: f32) -> (f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%a = %v) -> f32 {
    %f = arith.mulf %a, %a : f32
    %g = arith.addf %f, %v : f32
    %h = arith.addf %g, %v : f32
    scf.yield %h : f32
  }
  %r2 = scf.for %t = %c0 to %n step %c1 iter_args(%a = %v) -> f32 {
    %f = arith.mulf %a, %v : f32
    %g = arith.addf %f, %a : f32
    %h = arith.subf %g, %v : f32
    scf.yield %h : f32
  }
  return %r, %r2 : f32, f32
}

// -----

// A loop that uses a value no function argument can carry (a GPU token)
// stays where it is.
// CHECK-LABEL: func.func @token
// CHECK: scf.for
// CHECK: gpu.wait [%{{.*}}]
// CHECK: call @token_loop
func.func @token(%n: index, %y: memref<?xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tok = gpu.wait async
  scf.for %t = %c0 to %n step %c1 {
    gpu.wait [%tok]
    %f = arith.mulf %v, %v : f32
    %g = arith.addf %f, %v : f32
    memref.store %g, %y[%t] : memref<?xf32>
  }
  scf.for %t = %c0 to %n step %c1 {
    %f = arith.mulf %v, %v : f32
    %g = arith.addf %f, %v : f32
    %h = arith.addf %g, %v : f32
    memref.store %h, %y[%t] : memref<?xf32>
  }
  return
}

// -----

// Identical loops (the scans of layers 1 to L-1 of a stack: the same cell
// on other buffers of the same types) share one function.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: (%[[N:[^:]*]]: index, %[[X:[^:]*]]: memref<?xf32>, %[[Y:[^:]*]]: memref<?xf32>, %[[Z:[^:]*]]: memref<?xf32>)
// CHECK: call @shared_loop(%[[N]], %[[X]], %[[Y]]) {no_inline}
// CHECK-NEXT: call @shared_loop(%[[N]], %[[Y]], %[[Z]]) {no_inline}
// CHECK-NEXT: return
// CHECK: func.func private @shared_loop(
// CHECK-NOT: func.func
func.func @shared(%n: index, %x: memref<?xf32>, %y: memref<?xf32>, %z: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %t = %c0 to %n step %c1 {
    %e = memref.load %x[%t] : memref<?xf32>
    %f = arith.mulf %e, %e : f32
    %g = arith.addf %f, %e : f32
    memref.store %g, %y[%t] : memref<?xf32>
  }
  scf.for %t = %c0 to %n step %c1 {
    %e = memref.load %y[%t] : memref<?xf32>
    %f = arith.mulf %e, %e : f32
    %g = arith.addf %f, %e : f32
    memref.store %g, %z[%t] : memref<?xf32>
  }
  return
}
