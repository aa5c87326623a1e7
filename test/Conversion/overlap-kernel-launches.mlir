// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches | FileCheck %s
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches --overlap-kernel-launches | FileCheck %s
// RUN: rnn-opt %s --split-input-file --overlap-kernel-launches="function=my_hook order-function=my_order" | FileCheck %s --check-prefix=HOOK
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches="let-dependents-launch=false" | FileCheck %s --check-prefix=NOTRIGGER
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches="let-dependents-launch=false" --overlap-kernel-launches="let-dependents-launch=false" | FileCheck %s --check-prefix=NOTRIGGER
// RUN: rnn-opt %s --split-input-file --verify-diagnostics --overlap-kernel-launches="early-loads=false" | FileCheck %s --check-prefix=NOEARLY

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

// -----

// In a time loop, a kernel reads what nothing in the loop writes before it
// waits: the step's rows of the projection (allocated and written before
// the loop: its pointer is taken there, for the GEMM that fills it) and a
// bias (a function argument only loaded). The wait moves into the bounds
// check, after those loads and before the first other access: the state,
// which a kernel of the loop writes, and the partials, whose pointer the
// loop hands to a GEMM. The host orders the loop's first launch after
// everything before it.
// CHECK: func.func private @rnn_cuda_order_next_launch()
// CHECK-LABEL: func.func @early_loads
// CHECK: memref.extract_aligned_pointer_as_index %[[PROJ:.*]] :
// CHECK: call @rnn_cuda_order_next_launch() : () -> ()
// CHECK-NEXT: scf.for %[[T:.*]] =
// CHECK: call @rnn_cuda_overlap_next_launch() : () -> ()
// CHECK-NEXT: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: scf.if
// CHECK-NEXT: memref.load %[[PROJ]][%[[T]], %{{.*}}] : memref<4x8xf32>
// CHECK-NEXT: memref.load %{{.*}}[%{{.*}}] : memref<8xf32>
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load %{{.*}}[%{{.*}}] : memref<8xf32, 1>
// CHECK-NEXT: memref.load %[[PARTIALS:.*]][%{{.*}}] : memref<8xf32, 2>
// The kernel that writes the state only stores: it waits first.
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// HOOK-LABEL: func.func @early_loads
// HOOK: call @my_order() : () -> ()
// HOOK-NEXT: scf.for
// HOOK-NOT: call @rnn_cuda_order_next_launch
// NOEARLY-LABEL: func.func @early_loads
// NOEARLY-NOT: rnn_cuda_order_next_launch
// NOEARLY: gpu.launch
// NOEARLY-NEXT: nvvm.griddepcontrol launch_dependents
// NOEARLY-NEXT: nvvm.griddepcontrol wait
func.func private @gemm(index)
func.func @early_loads(%bias: memref<8xf32>, %state: memref<8xf32, 1>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %proj = memref.alloc() : memref<4x8xf32>
  %partials = memref.alloc() : memref<8xf32, 2>
  %pp = memref.extract_aligned_pointer_as_index %proj : memref<4x8xf32> -> index
  func.call @gemm(%pp) : (index) -> ()
  scf.for %t = %c0 to %c4 step %c1 {
    %qp = memref.extract_aligned_pointer_as_index %partials : memref<8xf32, 2> -> index
    func.call @gemm(%qp) : (index) -> ()
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %in = arith.cmpi ult, %tx, %n : index
      scf.if %in {
        %s = memref.load %state[%tx] : memref<8xf32, 1>
        %q = memref.load %partials[%tx] : memref<8xf32, 2>
        %x = memref.load %proj[%t, %tx] : memref<4x8xf32>
        %b = memref.load %bias[%tx] : memref<8xf32>
        %sum = arith.addf %x, %b : f32
        %sum2 = arith.addf %sum, %q : f32
        %new = arith.addf %sum2, %s : f32
        memref.store %new, %state[%tx] : memref<8xf32, 1>
      }
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %state[%tx] : memref<8xf32, 1>
      gpu.terminator
    }
  }
  return
}

// -----

// Left waiting at their start: a kernel outside any loop; a load whose
// index comes from a load of written memory; a buffer allocated inside the
// loop; an if followed by another access; a kernel whose only loads read
// what the loop writes; a buffer that is an outer loop's iteration argument
// (another buffer each time round); a global. No loop needs ordering.
// CHECK-LABEL: func.func @late_loads
// CHECK-NOT: rnn_cuda_order_next_launch
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NOT: rnn_cuda_order_next_launch
func.func @late_loads(%table: memref<8xf32>, %index: memref<8xindex>, %out: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %table[%tx] : memref<8xf32>
    memref.store %v, %out[%tx] : memref<8xf32>
    gpu.terminator
  }
  scf.for %t = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %i = memref.load %index[%tx] : memref<8xindex>
      %v = memref.load %table[%i] : memref<8xf32>
      memref.store %v, %out[%tx] : memref<8xf32>
      memref.store %c0, %index[%tx] : memref<8xindex>
      gpu.terminator
    }
    %scratch = memref.alloc() : memref<8xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %v = memref.load %scratch[%tx] : memref<8xf32>
      memref.store %v, %out[%tx] : memref<8xf32>
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %in = arith.cmpi ult, %tx, %n : index
      scf.if %in {
        %v = memref.load %table[%tx] : memref<8xf32>
        memref.store %v, %out[%tx] : memref<8xf32>
      }
      %w = memref.load %out[%tx] : memref<8xf32>
      memref.store %w, %out[%c0] : memref<8xf32>
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %v = memref.load %out[%tx] : memref<8xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %out[%tx] : memref<8xf32>
      gpu.terminator
    }
  }
  %last = scf.for %s = %c0 to %n step %c1 iter_args(%buf = %table) -> (memref<8xf32>) {
    scf.for %t = %c0 to %n step %c1 {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
        %v = memref.load %buf[%tx] : memref<8xf32>
        memref.store %v, %out[%tx] : memref<8xf32>
        gpu.terminator
      }
    }
    scf.yield %out : memref<8xf32>
  }
  %global = memref.get_global @weights : memref<8xf32>
  scf.for %t = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %v = memref.load %global[%tx] : memref<8xf32>
      memref.store %v, %out[%tx] : memref<8xf32>
      gpu.terminator
    }
  }
  return
}
memref.global "private" constant @weights : memref<8xf32> = dense<1.0>

// -----

// A symbol named like the ordering hook with another type is an error.
// expected-error @+1 {{'func.func' op is named like the launch hook 'rnn_cuda_order_next_launch' but has type '(i32) -> ()'; the hook takes and returns nothing}}
func.func private @rnn_cuda_order_next_launch(i32)
func.func @order_clash(%bias: memref<8xf32>, %out: memref<8xf32, 1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %t = %c0 to %c4 step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %bias[%tx] : memref<8xf32>
      memref.store %v, %out[%tx] : memref<8xf32, 1>
      gpu.terminator
    }
  }
  return
}
