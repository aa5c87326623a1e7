// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches | FileCheck %s
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches --overlap-kernel-launches | FileCheck %s
// RUN: rnn-opt %s --split-input-file --overlap-kernel-launches="function=my_hook" | FileCheck %s --check-prefix=HOOK
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches="let-dependents-launch=false" | FileCheck %s --check-prefix=NOTRIGGER
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches="let-dependents-launch=false" --overlap-kernel-launches="let-dependents-launch=false" | FileCheck %s --check-prefix=NOTRIGGER

// Every launch, guarded or not, inside a loop or not, first lets the grid
// behind it launch, then waits for the grids ahead of it, and the host
// announces it to the runtime right before launching it. Twice is the same
// as once. Without let-dependents-launch the kernels only wait.
// CHECK: func.func private @rnn_cuda_overlap_next_launch()
// CHECK-LABEL: func.func @step
// CHECK: scf.for
// CHECK: func.call @rnn_cuda_overlap_next_launch() : () -> ()
// CHECK-NEXT: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: gpu.terminator
// CHECK: scf.if
// CHECK-NEXT: func.call @rnn_cuda_overlap_next_launch() : () -> ()
// CHECK-NEXT: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NOT: nvvm.griddepcontrol
// CHECK-NOT: func.call
// NOTRIGGER-LABEL: func.func @step
// NOTRIGGER: gpu.launch
// NOTRIGGER-NEXT: nvvm.griddepcontrol wait
// NOTRIGGER-NOT: launch_dependents
// NOTRIGGER: gpu.launch
// NOTRIGGER-NEXT: nvvm.griddepcontrol wait
// NOTRIGGER-NOT: launch_dependents
// HOOK: func.func private @my_hook()
// HOOK-LABEL: func.func @step
// HOOK: func.call @my_hook()
// HOOK-NOT: call @rnn_cuda_overlap_next_launch
// HOOK: func.call @my_hook()
// HOOK-NOT: call @rnn_cuda_overlap_next_launch
func.func @step(%buf: memref<8xf32>, %n: index, %go: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %t = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      memref.store %one, %buf[%tx] : memref<8xf32>
      gpu.terminator
    }
  }
  scf.if %go {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      memref.store %one, %buf[%tx] : memref<8xf32>
      gpu.terminator
    }
  }
  return
}

// -----

// Kernels after bf16 GEMMs wait and are announced too: whether to launch
// them early is the runtime's call (it knows whether cuBLAS or its own
// kernel ran the GEMM).
// CHECK-LABEL: func.func @bf16_step
// CHECK: call @rnn_cuda_overlap_next_launch
// CHECK: nvvm.griddepcontrol wait
// CHECK-LABEL: func.func @f32_step
// CHECK: call @rnn_cuda_overlap_next_launch
// CHECK: nvvm.griddepcontrol wait
func.func private @rnn_cuda_gemm(i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64)
func.func @bf16_step(%buf: memref<8xf32>, %x: i64) {
  %c1 = arith.constant 1 : index
  %bf16 = arith.constant 2 : i32
  %f32 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  func.call @rnn_cuda_gemm(%bf16, %f32, %f32, %x, %x, %x, %x, %x, %x, %x, %x, %x) : (i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %one, %buf[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}
func.func @f32_step(%buf: memref<8xf32>, %x: i64) {
  %c1 = arith.constant 1 : index
  %f32 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  func.call @rnn_cuda_gemm(%f32, %f32, %f32, %x, %x, %x, %x, %x, %x, %x, %x, %x) : (i32, i32, i32, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %one, %buf[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}

// -----

// A module without kernels is left alone: no hook is declared.
// CHECK-LABEL: func.func @no_kernels
// CHECK-NOT: rnn_cuda_overlap_next_launch
func.func @no_kernels() {
  return
}

// -----

// A symbol of the hook's name with another type is an error, not a call
// that would not link.
// expected-error @+1 {{'func.func' op is named like the launch hook 'rnn_cuda_overlap_next_launch' but has type '(i32) -> ()'; the hook takes and returns nothing}}
func.func private @rnn_cuda_overlap_next_launch(i32)
func.func @clash(%buf: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %one, %buf[%tx] : memref<8xf32>
    gpu.terminator
  }
  return
}
