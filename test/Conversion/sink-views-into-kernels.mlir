// RUN: rnn-opt %s --sink-views-into-kernels | FileCheck %s

// The kernel reads two windows of one buffer: after the pass both views are
// built inside the launch from the buffer and the dynamic offset, so the
// outlined kernel would take one descriptor instead of two. The size read
// from the buffer stays outside.
// CHECK-LABEL: func.func @two_windows
// CHECK: %[[ROWS:.*]] = memref.dim %arg0
// CHECK-NOT: memref.subview
// CHECK: gpu.launch
// CHECK: memref.subview %arg0[%arg1, 0] [%[[ROWS]], 4]
// CHECK: memref.subview %arg0[%arg1, 4] [%[[ROWS]], 4]
// CHECK: gpu.terminator
func.func @two_windows(%buf: memref<?x8xf32>, %off: index, %out: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %buf, %c0 : memref<?x8xf32>
  %a = memref.subview %buf[%off, 0] [%rows, 4] [1, 1] : memref<?x8xf32> to memref<?x4xf32, strided<[8, 1], offset: ?>>
  %b = memref.subview %buf[%off, 4] [%rows, 4] [1, 1] : memref<?x8xf32> to memref<?x4xf32, strided<[8, 1], offset: ?>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%c0, %c0] : memref<?x4xf32, strided<[8, 1], offset: ?>>
    %y = memref.load %b[%c0, %c0] : memref<?x4xf32, strided<[8, 1], offset: ?>>
    %s = arith.addf %x, %y : f32
    memref.store %s, %out[%c0, %c0] : memref<?x4xf32>
    gpu.terminator
  }
  return
}

// A constant global read by a kernel is taken inside the launch, so that
// outlining gives the kernel module its own (device) copy instead of passing
// the host's address; a mutable global stays outside.
// CHECK-LABEL: func.func @constant_global
// CHECK: memref.get_global @mutable
// CHECK: gpu.launch
// CHECK: memref.get_global @three
// CHECK: gpu.terminator
memref.global "private" constant @three : memref<f32> = dense<3.000000e+00>
memref.global "private" @mutable : memref<f32> = dense<0.000000e+00>
func.func @constant_global(%out: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %g = memref.get_global @three : memref<f32>
  %m = memref.get_global @mutable : memref<f32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %g[] : memref<f32>
    %y = memref.load %m[] : memref<f32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %out[%c0] : memref<2xf32>
    gpu.terminator
  }
  return
}
