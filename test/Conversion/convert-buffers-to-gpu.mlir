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
