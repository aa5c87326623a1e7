// RUN: rnn-opt %s -split-input-file --convert-row-groups-to-kernels | FileCheck %s
// RUN: rnn-opt %s -split-input-file --convert-row-groups-to-kernels=block-size=32 | FileCheck %s --check-prefix=REGS
// RUN: rnn-opt %s -split-input-file "--convert-row-groups-to-kernels=block-size=32 distinct-arguments" | FileCheck %s --check-prefix=DISTINCT

// A marked group (a row sum and a phase that divides by it) with the
// fill that initialises the sum: one launch, a block per row, the sum kept
// in registers (the per-row buffer is neither filled nor stored: nothing
// outside the group reads it), the result stored by each thread.
// CHECK-LABEL: func.func @normalise
// CHECK-NOT: linalg.
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ROWS:.*]], {{.*}}) threads({{.*}}) in ({{.*}} = %c32
// CHECK-SAME: workgroup(%[[SHARED:.*]] : memref<1xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[SHARED]]
// CHECK: gpu.barrier
// CHECK-NOT: memref.store %{{.*}}, %[[SUM:.*]][
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %arg1
// CHECK: gpu.terminator
// CHECK-NOT: linalg.
// CHECK-NOT: rnn.row_group
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @normalise(%x: memref<?x20xf32>, %y: memref<?x20xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x20xf32>
  %sum = memref.alloc(%n) : memref<?x1xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<?x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x20xf32>) outs(%sum : memref<?x1xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<?x20xf32>, memref<?x1xf32>) outs(%y : memref<?x20xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  }
  memref.dealloc %sum : memref<?x1xf32>
  return
}

// -----

// Something the kernel cannot take sits between the group's ops (a call
// that may read the sum): the group is left to the other mappings, unmarked.
// CHECK-LABEL: func.func @interrupted
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK-NOT: rnn.row_group
// CHECK: call @peek
// CHECK: linalg.generic
// CHECK-NOT: rnn.row_group
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func private @peek(memref<?x1xf32>)
func.func @interrupted(%x: memref<?x20xf32>, %y: memref<?x20xf32>, %sum: memref<?x1xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x20xf32>) outs(%sum : memref<?x1xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  call @peek(%sum) : (memref<?x1xf32>) -> ()
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<?x20xf32>, memref<?x1xf32>) outs(%y : memref<?x20xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// The sum lands in a caller's buffer (an argument: it may be read later),
// starting from the value already there: the kernel loads it, folds it in
// and stores the row's sum from thread 0.
// CHECK-LABEL: func.func @into_argument
// CHECK: gpu.launch
// CHECK: %[[INIT:.*]] = memref.load %arg1[
// CHECK: gpu.barrier
// CHECK: arith.addf %{{.*}}, %[[INIT]]
// CHECK: scf.if
// CHECK-NEXT: memref.store %{{.*}}, %arg1[
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @into_argument(%x: memref<?x20xf32>, %sum: memref<?x1xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x20xf32>) outs(%sum : memref<?x1xf32>) attrs = {rnn.row_group = 3 : i64} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Rows of 64 with 32 threads (the REGS run): every column is in an unrolled stretch (32
// and 32 + 32). The first phase's result %e (a temporary nothing outside
// the group reads) stays in registers: the row sum and the second phase
// take it from there, so the kernel neither loads nor stores %e, and reads
// %x once per column. Only the result %y is stored.
// REGS-LABEL: func.func @kept_in_registers
// REGS-SAME: (%[[X:.*]]: memref<?x64xf32>, %[[Y:.*]]: memref<?x64xf32>)
// REGS: %[[E:.*]] = memref.alloc
// REGS: gpu.launch
// REGS-COUNT-2: memref.load %[[X]]
// REGS-NOT: memref.load %[[X]]
// REGS-NOT: %[[E]][
// REGS: gpu.barrier
// REGS-NOT: memref.load %[[X]]
// REGS-NOT: %[[E]][
// REGS-COUNT-2: memref.store %{{.*}}, %[[Y]]
// REGS-NOT: %[[E]][
// REGS: gpu.terminator
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @kept_in_registers(%x: memref<?x64xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %e = memref.alloc(%n) : memref<?x64xf32>
  %sum = memref.alloc(%n) : memref<?x1xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%e : memref<?x64xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<?x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<?x64xf32>) outs(%sum : memref<?x1xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %sum : memref<?x64xf32>, memref<?x1xf32>) outs(%y : memref<?x64xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    linalg.yield %d : f32
  }
  memref.dealloc %e : memref<?x64xf32>
  memref.dealloc %sum : memref<?x1xf32>
  return
}

// -----

// A gain read after the reduction: the load of %g does not depend on it.
// With distinct-arguments (%g cannot overlap %y, the only buffer the kernel
// writes) the kernel loads %g at its start, before the first shuffle, so
// the load travels while the row is reduced; without it %g may overlap %y
// and is loaded where it is used, after the barrier.
// REGS-LABEL: func.func @gain_after_reduction
// REGS: gpu.barrier
// REGS: memref.load %arg1[
// DISTINCT-LABEL: func.func @gain_after_reduction
// DISTINCT: gpu.launch
// DISTINCT-COUNT-2: memref.load %arg1[
// DISTINCT: gpu.shuffle
// DISTINCT: gpu.barrier
// DISTINCT-NOT: memref.load %arg1[
// DISTINCT: gpu.terminator
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @gain_after_reduction(%x: memref<?x64xf32>, %g: memref<64xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %sum = memref.alloc(%n) : memref<?x1xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<?x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%sum : memref<?x1xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %g : memref<?x64xf32>, memref<?x1xf32>, memref<64xf32>) outs(%y : memref<?x64xf32>) attrs = {rnn.row_group = 0 : i64} {
  ^bb0(%in: f32, %s: f32, %gain: f32, %out: f32):
    %d = arith.divf %in, %s : f32
    %m = arith.mulf %d, %gain : f32
    linalg.yield %m : f32
  }
  memref.dealloc %sum : memref<?x1xf32>
  return
}
