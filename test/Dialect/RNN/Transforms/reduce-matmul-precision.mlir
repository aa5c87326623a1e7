// RUN: rnn-opt %s -split-input-file --rnn-reduce-matmul-precision | FileCheck %s
// RUN: rnn-opt %s -split-input-file --rnn-reduce-matmul-precision=element-type=f16 | FileCheck %s --check-prefix=F16
// RUN: rnn-opt %s -split-input-file --rnn-reduce-matmul-precision=element-type=tf32 | FileCheck %s --check-prefix=TF32
// RUN: not rnn-opt %s --rnn-reduce-matmul-precision=element-type=f8 2>&1 | FileCheck %s --check-prefix=BAD

// Every f32 matmul reads its operands cast to bf16 and still produces f32;
// allow_tf32 goes (it only concerns f32 operands); the pointwise math is
// untouched. A matmul that already reads bf16 is left as it is.
// CHECK-LABEL: rnn.cell @elman
// CHECK: %[[X:.*]] = rnn.cast %arg0 : tensor<?x3xf32> to tensor<?x3xbf16>
// CHECK: %[[W:.*]] = rnn.cast %arg2 : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: rnn.matmul %[[X]], %[[W]] : tensor<?x3xbf16>, tensor<4x3xbf16> -> tensor<?x4xf32>
// CHECK: %[[H:.*]] = rnn.cast %arg1 : tensor<?x4xf32> to tensor<?x4xbf16>
// CHECK: %[[U:.*]] = rnn.cast %arg3 : tensor<4x4xf32> to tensor<4x4xbf16>
// CHECK: rnn.matmul %[[H]], %[[U]] : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
// CHECK: rnn.add %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?x4xf32>
// CHECK: %[[T16:.*]] = rnn.cast %{{.*}} : tensor<?x4xf32> to tensor<?x4xbf16>
// CHECK-NOT: rnn.cast
// CHECK: rnn.matmul %[[T16]], %arg4 : tensor<?x4xbf16>, tensor<4x4xbf16>
// F16-LABEL: rnn.cell @elman
// F16: rnn.matmul %{{.*}}, %{{.*}} : tensor<?x3xf16>, tensor<4x3xf16> -> tensor<?x4xf32>
// BAD: element-type must be bf16, f16 or tf32, not 'f8'
rnn.cell @elman inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<4x3xf32>, %U: tensor<4x4xf32>, %V: tensor<4x4xbf16>) -> (tensor<?x4xf32>) {
  %wx = rnn.matmul %x, %W allow_tf32 : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %uh = rnn.matmul %h, %U allow_tf32 : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %wx, %uh : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  %t16 = rnn.cast %t : tensor<?x4xf32> to tensor<?x4xbf16>
  %v = rnn.matmul %t16, %V : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
  rnn.yield outputs(%v : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}

// -----

// tf32: no casts; every f32 matmul gets allow_tf32 (one that has it keeps
// it), a bf16 one stays as it is.
// TF32-LABEL: rnn.cell @plain
// TF32-NOT: rnn.cast %arg
// TF32: rnn.matmul %arg0, %arg2 allow_tf32 : tensor<?x3xf32>, tensor<4x3xf32>
// TF32: rnn.matmul %arg1, %arg3 allow_tf32 : tensor<?x4xf32>, tensor<4x4xf32>
// TF32: rnn.matmul %{{.*}}, %arg4 : tensor<?x4xbf16>, tensor<4x4xbf16>
rnn.cell @plain inputs(%x: tensor<?x3xf32>) states(%h: tensor<?x4xf32>)
    params(%W: tensor<4x3xf32>, %U: tensor<4x4xf32>, %V: tensor<4x4xbf16>) -> (tensor<?x4xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x3xf32>, tensor<4x3xf32> -> tensor<?x4xf32>
  %uh = rnn.matmul %h, %U allow_tf32 : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  %s = rnn.add %wx, %uh : tensor<?x4xf32>, tensor<?x4xf32>
  %t = rnn.tanh %s : tensor<?x4xf32>
  %t16 = rnn.cast %t : tensor<?x4xf32> to tensor<?x4xbf16>
  %v = rnn.matmul %t16, %V : tensor<?x4xbf16>, tensor<4x4xbf16> -> tensor<?x4xf32>
  rnn.yield outputs(%v : tensor<?x4xf32>) states(%t : tensor<?x4xf32>)
}

// -----

// A head-wise product is rounded the same way: bf16 operands, an f32
// result, no allow_tf32.
// CHECK-LABEL: rnn.cell @heads
// CHECK: %[[H:.*]] = rnn.cast %arg1 : tensor<?x8xf32> to tensor<?x8xbf16>
// CHECK: %[[R:.*]] = rnn.cast %arg2 : tensor<2x12x4xf32> to tensor<2x12x4xbf16>
// CHECK: rnn.headwise_matmul %[[H]], %[[R]] gates 3 : tensor<?x8xbf16>, tensor<2x12x4xbf16> -> tensor<?x24xf32>
// F16-LABEL: rnn.cell @heads
// F16: rnn.headwise_matmul %{{.*}}, %{{.*}} gates 3 : tensor<?x8xf16>, tensor<2x12x4xf16> -> tensor<?x24xf32>
// TF32-LABEL: rnn.cell @heads
// TF32: rnn.headwise_matmul %arg1, %arg2 gates 3 allow_tf32 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
rnn.cell @heads inputs(%x: tensor<?x24xf32>) states(%h: tensor<?x8xf32>)
    params(%R: tensor<2x12x4xf32>) -> (tensor<?x24xf32>) {
  %p = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  %s = rnn.add %x, %p : tensor<?x24xf32>, tensor<?x24xf32>
  %a, %b, %c = rnn.split %s : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %t = rnn.tanh %a : tensor<?x8xf32>
  rnn.yield outputs(%s : tensor<?x24xf32>) states(%t : tensor<?x8xf32>)
}
