// RUN: rnn-opt %s -split-input-file --convert-buffers-to-gpu | FileCheck %s

// Model data goes to stream-ordered device memory, each allocation with its
// own token and an immediate wait (the runtime makes the wait free); copies
// become linalg.copy, which the kernel mapping turns into a copy kernel.
// CHECK-LABEL: func.func @data
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[M:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] (%arg1) : memref<?x4xf32>
// CHECK: gpu.wait [%[[T1]]]
// CHECK: linalg.copy ins(%arg0 : memref<?x4xf32>) outs(%[[M]] : memref<?x4xf32>)
// CHECK: %[[T2:.*]] = gpu.wait async
// CHECK: %[[T3:.*]] = gpu.dealloc async [%[[T2]]] %[[M]] : memref<?x4xf32>
// CHECK: gpu.wait [%[[T3]]]
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.dealloc
func.func @data(%src: memref<?x4xf32>, %n: index) {
  %m = memref.alloc(%n) : memref<?x4xf32>
  memref.copy %src, %m : memref<?x4xf32> to memref<?x4xf32>
  memref.dealloc %m : memref<?x4xf32>
  return
}

// -----

// The deallocation's bookkeeping (index addresses, i1 ownership flags) is
// read by host code and stays in host memory.
// CHECK-LABEL: func.func @bookkeeping
// CHECK: memref.alloc() : memref<2xindex>
// CHECK: memref.alloc() : memref<2xi1>
// CHECK: memref.dealloc %{{.*}} : memref<2xindex>
// CHECK-NOT: gpu.alloc
func.func @bookkeeping() {
  %a = memref.alloc() : memref<2xindex>
  %b = memref.alloc() : memref<2xi1>
  memref.dealloc %a : memref<2xindex>
  memref.dealloc %b : memref<2xi1>
  return
}

// -----

// A constant (splat) global whose address host code hands to a library call
// (a GEMM operand) would be read by the device from host memory: it becomes
// a device buffer filled with the splat value and freed at the return. A
// constant global that only kernels read is left alone (the kernels take
// their own copy: sink-views-into-kernels).
// CHECK-LABEL: func.func @library_operand
// CHECK-NOT: memref.get_global @weight
// CHECK: %[[W:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] () : memref<2x2xf32>
// CHECK: %[[V:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[W]] : memref<2x2xf32>)
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: memref.get_global @scale
// CHECK: gpu.dealloc async [%{{.*}}] %[[W]] : memref<2x2xf32>
// CHECK-NEXT: gpu.wait
// CHECK-NEXT: return
memref.global "private" constant @weight : memref<2x2xf32> = dense<5.000000e-01>
memref.global "private" constant @scale : memref<f32> = dense<3.000000e+00>
func.func private @gemm(index)
func.func @library_operand() {
  %w = memref.get_global @weight : memref<2x2xf32>
  %p = memref.extract_aligned_pointer_as_index %w : memref<2x2xf32> -> index
  func.call @gemm(%p) : (index) -> ()
  %s = memref.get_global @scale : memref<f32>
  %o = memref.alloc() : memref<f32>
  linalg.copy ins(%s : memref<f32>) outs(%o : memref<f32>)
  memref.dealloc %o : memref<f32>
  return
}
