// RUN: rnn-opt %s -split-input-file -verify-diagnostics --convert-parallel-loops-to-kernels | FileCheck %s
// RUN: rnn-opt %s -split-input-file -verify-diagnostics --convert-parallel-loops-to-kernels='block-size=128' | FileCheck %s --check-prefix=SIZE128

// A [B, N] loop nest becomes one launch over B*N threads, linearised
// row-major (the last index varies fastest), with a bound check and a guard
// that launches nothing for an empty space; the inner sequential loop stays
// in the thread.
// CHECK-LABEL: func.func @rows
// CHECK: %[[BSIZE:.*]] = arith.constant 256 : index
// CHECK: %[[GRID:.*]] = arith.ceildivui %[[TOTAL:.*]], %[[BSIZE]]
// CHECK: scf.if
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BSIZE]],
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %[[TX]]
// CHECK: arith.cmpi ult, %[[ID]], %[[TOTAL]]
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %{{.*}}
// CHECK: %[[I:.*]] = arith.divui %[[ID]], %{{.*}}
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}]
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
// SIZE128: arith.constant 128 : index
func.func @rows(%in: memref<?x8xf32>, %out: memref<?x8xf32>, %b: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%b, %c8) step (%c1, %c1) {
    %acc = scf.for %k = %c0 to %c8 step %c1 iter_args(%s = %j) -> (index) {
      %t = arith.addi %s, %k : index
      scf.yield %t : index
    }
    %v = memref.load %in[%i, %acc] : memref<?x8xf32>
    memref.store %v, %out[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// A loop with a reduction result cannot be a kernel: an error, not a wrong
// kernel.
func.func @with_result(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.parallel' op with reductions cannot become a kernel}}
  %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%c0) -> index {
    scf.reduce(%i : index) {
    ^bb0(%a: index, %b: index):
      %s = arith.addi %a, %b : index
      scf.reduce.return %s : index
    }
  }
  return %r : index
}
