// RUN: rnn-opt %s -split-input-file --convert-lanes-to-runtime-calls -verify-diagnostics | FileCheck %s
// RUN: rnn-opt %s -split-input-file --convert-lanes-to-runtime-calls=streams=false -verify-diagnostics | FileCheck %s --check-prefix=INORDER

// Each lane's ops between its mark, moved to its start (the dealloc the
// lane had before its mark goes to the lane's stream too), and the end of
// the lane, after its last op; the join right after the loop, before the
// frees that follow it.
// CHECK-LABEL: func.func @two_lanes
// CHECK: scf.for
// CHECK:   call @rnn_cuda_lane_begin(%{{.*}}, %{{.*}}) : (i64, i64) -> ()
// CHECK-NEXT:   linalg.fill {{.*}} outs(%{{.*}} :
// CHECK-NEXT:   %[[E0:.*]] = arith.constant 0 : i64
// CHECK-NEXT:   call @rnn_cuda_lane_end(%[[E0]]) : (i64) -> ()
// CHECK:   call @rnn_cuda_lane_begin
// CHECK-NEXT:   memref.subview
// CHECK-NEXT:   memref.alloc
// CHECK-NEXT:   memref.copy
// CHECK-NEXT:   memref.dealloc
// CHECK-NEXT:   %[[E1:.*]] = arith.constant 1 : i64
// CHECK-NEXT:   call @rnn_cuda_lane_end(%[[E1]])
// CHECK-NOT: scf.execute_region
// CHECK: }
// CHECK-NEXT: call @rnn_cuda_lanes_join() : () -> ()
// CHECK-NEXT: memref.dealloc
// CHECK-DAG: func.func private @rnn_cuda_lane_end(i64)
// CHECK-DAG: func.func private @rnn_cuda_lanes_join()
// INORDER-LABEL: func.func @two_lanes
// INORDER-NOT: call
// INORDER-NOT: scf.execute_region
// INORDER: linalg.fill
// INORDER: memref.copy
// INORDER-NOT: call
// INORDER-NOT: rnn_cuda_lane_begin
func.func private @rnn_cuda_lane_begin(i64, i64)
func.func @two_lanes(%n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  scf.for %k = %c0 to %n step %c1 {
    %row = memref.subview %a[%k, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    scf.execute_region no_inline {
      %l = arith.constant 0 : i64
      %after = arith.constant -1 : i64
      func.call @rnn_cuda_lane_begin(%l, %after) : (i64, i64) -> ()
      linalg.fill ins(%v : f32) outs(%row : memref<1x8xf32, strided<[8, 1], offset: ?>>)
      scf.yield
    }
    scf.execute_region no_inline {
      %dst = memref.subview %b[%k, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
      %tmp = memref.alloc() : memref<8xf32>
      memref.copy %row, %dst : memref<1x8xf32, strided<[8, 1], offset: ?>> to memref<1x8xf32, strided<[8, 1], offset: ?>>
      memref.dealloc %tmp : memref<8xf32>
      %l = arith.constant 1 : i64
      %after = arith.constant 0 : i64
      func.call @rnn_cuda_lane_begin(%l, %after) : (i64, i64) -> ()
      scf.yield
    }
  }
  memref.dealloc %a : memref<4x8xf32>
  memref.dealloc %b : memref<4x8xf32>
  return
}

// -----

// A copy between the lanes would run on the call's stream beside them: the
// lanes run in order, without the calls.
// CHECK-LABEL: func.func @copy_between
// CHECK-NOT: call
// CHECK-NOT: scf.execute_region
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: linalg.fill
// CHECK-NOT: call
func.func private @rnn_cuda_lane_begin(i64, i64)
func.func @copy_between(%n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l0 = arith.constant 0 : i64
  %l1 = arith.constant 1 : i64
  %none = arith.constant -1 : i64
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  scf.for %k = %c0 to %n step %c1 {
    scf.execute_region no_inline {
      func.call @rnn_cuda_lane_begin(%l0, %none) : (i64, i64) -> ()
      linalg.fill ins(%v : f32) outs(%a : memref<8xf32>)
      scf.yield
    }
    memref.copy %a, %b : memref<8xf32> to memref<8xf32>
    scf.execute_region no_inline {
      func.call @rnn_cuda_lane_begin(%l1, %l0) : (i64, i64) -> ()
      linalg.fill ins(%v : f32) outs(%b : memref<8xf32>)
      scf.yield
    }
  }
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// Lane results are what the lane yields; lanes in a function's body join
// before it returns. An execute_region without a mark is no lane.
// CHECK-LABEL: func.func @results
// CHECK: call @rnn_cuda_lane_begin
// CHECK-NEXT: %[[V:.*]] = memref.subview
// CHECK: call @rnn_cuda_lane_end
// CHECK: call @rnn_cuda_lane_begin
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[V]] :
// CHECK: call @rnn_cuda_lane_end
// CHECK-NEXT: call @rnn_cuda_lanes_join
// CHECK-NEXT: return
func.func private @rnn_cuda_lane_begin(i64, i64)
func.func @results(%a: memref<8xf32>, %v: f32) {
  %l0 = arith.constant 0 : i64
  %l1 = arith.constant 1 : i64
  %none = arith.constant -1 : i64
  %view = scf.execute_region -> memref<4xf32, strided<[1]>> no_inline {
    func.call @rnn_cuda_lane_begin(%l0, %none) : (i64, i64) -> ()
    %s = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
    scf.yield %s : memref<4xf32, strided<[1]>>
  }
  scf.execute_region no_inline {
    func.call @rnn_cuda_lane_begin(%l1, %l0) : (i64, i64) -> ()
    linalg.fill ins(%v : f32) outs(%view : memref<4xf32, strided<[1]>>)
    scf.yield
  }
  return
}

// -----

// Lanes that wait for no other but write one buffer (bufferization gave
// two lanes of a group one buffer) run in order.
// CHECK-LABEL: func.func @shared_buffer
// CHECK-NOT: call
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK-NOT: call
func.func private @rnn_cuda_lane_begin(i64, i64)
func.func @shared_buffer(%a: memref<8xf32>, %v: f32) {
  %l0 = arith.constant 0 : i64
  %l1 = arith.constant 1 : i64
  %none = arith.constant -1 : i64
  scf.execute_region no_inline {
    scf.execute_region no_inline {
      func.call @rnn_cuda_lane_begin(%l0, %none) : (i64, i64) -> ()
      linalg.fill ins(%v : f32) outs(%a : memref<8xf32>)
      scf.yield
    }
    scf.execute_region no_inline {
      func.call @rnn_cuda_lane_begin(%l1, %none) : (i64, i64) -> ()
      %half = memref.subview %a[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
      linalg.fill ins(%v : f32) outs(%half : memref<4xf32, strided<[1], offset: 4>>)
      scf.yield
    }
    scf.yield
  }
  return
}

// -----

func.func private @rnn_cuda_lane_begin(i64, i64)
func.func @bad_marks(%lane: i64) {
  %l2 = arith.constant 2 : i64
  scf.execute_region no_inline {
    // expected-error @+1 {{marks a lane with constants (lane, after), 0 <= lane < 16 and after < lane}}
    func.call @rnn_cuda_lane_begin(%l2, %l2) : (i64, i64) -> ()
    scf.yield
  }
  scf.execute_region no_inline {
    func.call @rnn_cuda_lane_begin(%lane, %l2) : (i64, i64) -> ()
    scf.yield
  }
  return
}
