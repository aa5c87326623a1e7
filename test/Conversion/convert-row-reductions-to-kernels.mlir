// RUN: rnn-opt %s -split-input-file --convert-row-reductions-to-kernels | FileCheck %s

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0, 0)>

// A row sum: one warp per row, 8 rows per block of 256 threads; lanes fold
// elements lane, lane + 32, ...; five butterfly shuffles; lane 0 stores.
// The zero fill of the output goes: the kernel stores the sum itself.
// CHECK-LABEL: func.func @row_sum
// CHECK-NOT: linalg.fill
// CHECK: %[[ROWS:.*]] = arith.muli %c1, %[[B:.*]] : index
// CHECK: %[[GRID:.*]] = arith.ceildivui %[[ROWS]], %c8
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]], {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK: scf.if
// CHECK: %[[PARTIAL:.*]] = scf.for %{{.*}} = %[[LANE]] to %{{.*}} step %c32 iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: memref.load %arg0
// CHECK: arith.addf
// CHECK: gpu.shuffle  xor %[[PARTIAL]], %c16_i32, %c32_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32,
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32,
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32,
// CHECK: %[[LAST:.*]], %{{.*}} = gpu.shuffle  xor %{{.*}}, %c1_i32,
// CHECK: %[[SUM:.*]] = arith.addf %[[LAST]]
// CHECK: scf.if
// CHECK-NOT: memref.load %arg1
// CHECK: memref.store %[[SUM]], %arg1
// CHECK-NOT: linalg.generic
func.func @row_sum(%x: memref<?x4096xf32>, %sums: memref<?x1xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sums : memref<?x1xf32>)
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x4096xf32>) outs(%sums : memref<?x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0, 0)>

// A row maximum onto an output that holds data: the lanes start from -inf
// and lane 0 folds the result into the value already there.
// CHECK-LABEL: func.func @row_max_onto_data
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEG_INF]])
// CHECK: arith.maximumf
// CHECK: %[[OLD:.*]] = memref.load %arg1
// CHECK: %[[NEW:.*]] = arith.maximumf %{{.*}}, %[[OLD]]
// CHECK: memref.store %[[NEW]], %arg1
func.func @row_max_onto_data(%x: memref<?x64xf32>, %maxima: memref<?x1xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%maxima : memref<?x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// -----

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0, 0)>

// Not a single associative combiner (a sum of squares): left to the
// generic mapping.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
func.func @sum_of_squares(%x: memref<?x64xf32>, %sums: memref<?x1xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%sums : memref<?x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  }
  return
}
