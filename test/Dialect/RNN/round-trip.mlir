// Every op of the dialect, printed, parsed and printed again, in the pretty
// and the generic form; the CHECK lines pin the pretty syntax.
// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic > %t.generic && rnn-opt %t.generic > %t.from-generic && diff %t.pretty %t.from-generic
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt --mlir-print-op-generic | diff %t.generic -
// RUN: FileCheck %s < %t.pretty

// CHECK-LABEL: rnn.cell @all_ops
// CHECK-SAME: inputs(%{{.*}}: tensor<?x8xf32>) states(%{{.*}}: tensor<?x6xf32>, %{{.*}}: tensor<?x6xf32>)
// CHECK-SAME: params(%{{.*}}: tensor<24x8xf32>, %{{.*}}: tensor<24x6xf32>, %{{.*}}: tensor<24xf32>, %{{.*}}: tensor<6x6xbf16>)
// CHECK-SAME: -> (tensor<?x6xf32>)
rnn.cell @all_ops inputs(%x: tensor<?x8xf32>) states(%h: tensor<?x6xf32>, %c: tensor<?x6xf32>)
    params(%W: tensor<24x8xf32>, %U: tensor<24x6xf32>, %b: tensor<24xf32>, %V: tensor<6x6xbf16>)
    -> (tensor<?x6xf32>) {
  // CHECK: rnn.matmul %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<24x8xf32> -> tensor<?x24xf32>
  %wx = rnn.matmul %x, %W : tensor<?x8xf32>, tensor<24x8xf32> -> tensor<?x24xf32>
  // CHECK: rnn.matmul %{{.*}}, %{{.*}} allow_tf32 : tensor<?x6xf32>, tensor<24x6xf32> -> tensor<?x24xf32>
  %uh = rnn.matmul %h, %U allow_tf32 : tensor<?x6xf32>, tensor<24x6xf32> -> tensor<?x24xf32>
  // CHECK: rnn.add %{{.*}}, %{{.*}} : tensor<?x24xf32>, tensor<?x24xf32>
  %s = rnn.add %wx, %uh : tensor<?x24xf32>, tensor<?x24xf32>
  // CHECK: rnn.add %{{.*}}, %{{.*}} : tensor<?x24xf32>, tensor<24xf32>
  %sb = rnn.add %s, %b : tensor<?x24xf32>, tensor<24xf32>
  // CHECK: rnn.split %{{.*}} : tensor<?x24xf32> -> tensor<?x6xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<?x6xf32>
  %i, %f, %g, %o = rnn.split %sb : tensor<?x24xf32> -> tensor<?x6xf32>, tensor<?x6xf32>, tensor<?x6xf32>, tensor<?x6xf32>
  %si = rnn.sigmoid %i : tensor<?x6xf32>
  %sf = rnn.sigmoid %f : tensor<?x6xf32>
  %tg = rnn.tanh %g : tensor<?x6xf32>
  %so = rnn.sigmoid %o : tensor<?x6xf32>
  %fc = rnn.mul %sf, %c : tensor<?x6xf32>, tensor<?x6xf32>
  %ig = rnn.mul %si, %tg : tensor<?x6xf32>, tensor<?x6xf32>
  %cn = rnn.add %fc, %ig : tensor<?x6xf32>, tensor<?x6xf32>
  // CHECK: rnn.constant 1.000000e+00 : tensor<f32>
  %one = rnn.constant 1.0 : tensor<f32>
  // CHECK: rnn.sub %{{.*}}, %{{.*}} : tensor<f32>, tensor<?x6xf32>
  %omf = rnn.sub %one, %sf : tensor<f32>, tensor<?x6xf32>
  %d = rnn.div %cn, %omf : tensor<?x6xf32>, tensor<?x6xf32>
  %mx = rnn.max %d, %cn : tensor<?x6xf32>, tensor<?x6xf32>
  %mn = rnn.min %mx, %one : tensor<?x6xf32>, tensor<f32>
  %n = rnn.neg %mn : tensor<?x6xf32>
  %r = rnn.relu %n : tensor<?x6xf32>
  %e = rnn.exp %r : tensor<?x6xf32>
  %l = rnn.log %e : tensor<?x6xf32>
  %q = rnn.sqrt %e : tensor<?x6xf32>
  %rq = rnn.rsqrt %q : tensor<?x6xf32>
  // CHECK: rnn.reduce_mean %{{.*}} : tensor<?x6xf32>
  %mean = rnn.reduce_mean %rq : tensor<?x6xf32>
  %sum = rnn.reduce_sum %rq : tensor<?x6xf32>
  %max = rnn.reduce_max %rq : tensor<?x6xf32>
  // CHECK: rnn.sub %{{.*}}, %{{.*}} : tensor<?x6xf32>, tensor<?x1xf32>
  %centred = rnn.sub %rq, %mean : tensor<?x6xf32>, tensor<?x1xf32>
  %scaled = rnn.div %centred, %sum : tensor<?x6xf32>, tensor<?x1xf32>
  %shifted = rnn.add %scaled, %max : tensor<?x6xf32>, tensor<?x1xf32>
  %plus_l = rnn.add %shifted, %l : tensor<?x6xf32>, tensor<?x6xf32>
  // CHECK: rnn.layer_norm %{{.*}} {epsilon = 1.000000e-03 : f64} : tensor<?x6xf32>
  %ln = rnn.layer_norm %plus_l {epsilon = 1.0e-3 : f64} : tensor<?x6xf32>
  // CHECK: rnn.layer_norm %{{.*}} : tensor<?x6xf32>
  %ln_default = rnn.layer_norm %ln : tensor<?x6xf32>
  %th = rnn.tanh %ln_default : tensor<?x6xf32>
  %hn = rnn.mul %so, %th : tensor<?x6xf32>, tensor<?x6xf32>
  // CHECK: rnn.cast %{{.*}} : tensor<?x6xf32> to tensor<?x6xbf16>
  %h16 = rnn.cast %hn : tensor<?x6xf32> to tensor<?x6xbf16>
  // CHECK: rnn.matmul %{{.*}}, %{{.*}} weight_in_out : tensor<?x6xbf16>, tensor<6x6xbf16> -> tensor<?x6xf32>
  %proj = rnn.matmul %h16, %V weight_in_out : tensor<?x6xbf16>, tensor<6x6xbf16> -> tensor<?x6xf32>
  // CHECK: rnn.matmul %{{.*}}, %{{.*}} acc %{{.*}} weight_in_out : tensor<?x6xbf16>, tensor<6x6xbf16>, tensor<?x6xf32> -> tensor<?x6xf32>
  %proj2 = rnn.matmul %h16, %V acc %proj weight_in_out : tensor<?x6xbf16>, tensor<6x6xbf16>, tensor<?x6xf32> -> tensor<?x6xf32>
  // CHECK: rnn.concat %{{.*}}, %{{.*}} : tensor<?x6xf32>, tensor<?x6xf32> -> tensor<?x12xf32>
  %both = rnn.concat %proj2, %hn : tensor<?x6xf32>, tensor<?x6xf32> -> tensor<?x12xf32>
  // CHECK: rnn.split %{{.*}} axis 1 : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x8xf32>
  %p0, %p1 = rnn.split %both axis 1 : tensor<?x12xf32> -> tensor<?x4xf32>, tensor<?x8xf32>
  %p = rnn.concat %p0, %p1 : tensor<?x4xf32>, tensor<?x8xf32> -> tensor<?x12xf32>
  %a, %bb = rnn.split %p : tensor<?x12xf32> -> tensor<?x6xf32>, tensor<?x6xf32>
  %out = rnn.add %a, %bb : tensor<?x6xf32>, tensor<?x6xf32>
  // CHECK: rnn.yield outputs(%{{.*}} : tensor<?x6xf32>) states(%{{.*}}, %{{.*}} : tensor<?x6xf32>, tensor<?x6xf32>)
  rnn.yield outputs(%out : tensor<?x6xf32>) states(%hn, %cn : tensor<?x6xf32>, tensor<?x6xf32>)
}

// A cell without step outputs or parameters prints without those groups.
// CHECK-LABEL: rnn.cell @accumulate inputs(%{{.*}}: tensor<4x3xf64>) states(%{{.*}}: tensor<4x3xf64>) {
// CHECK: rnn.yield states(%{{.*}} : tensor<4x3xf64>)
rnn.cell @accumulate inputs(%x: tensor<4x3xf64>) states(%s: tensor<4x3xf64>) {
  %n = rnn.add %s, %x : tensor<4x3xf64>, tensor<4x3xf64>
  rnn.yield states(%n : tensor<4x3xf64>)
}

// CHECK-LABEL: func.func @apply
func.func @apply(%xs: tensor<5x?x8xf32>, %h0: tensor<?x6xf32>, %c0: tensor<?x6xf32>,
                 %W: tensor<24x8xf32>, %U: tensor<24x6xf32>, %b: tensor<24xf32>,
                 %V: tensor<6x6xbf16>, %len: tensor<?xi64>, %x4: tensor<4x3xf64>,
                 %seq4: tensor<?x4x3xf64>) -> (tensor<5x?x6xf32>, tensor<?x6xf32>) {
  // CHECK: rnn.scan @all_ops inputs(%{{.*}} : tensor<5x?x8xf32>) init(%{{.*}}, %{{.*}} : tensor<?x6xf32>, tensor<?x6xf32>)
  // CHECK-SAME: params(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<24x8xf32>, tensor<24x6xf32>, tensor<24xf32>, tensor<6x6xbf16>)
  // CHECK-SAME: -> outputs(tensor<5x?x6xf32>) states(tensor<?x6xf32>, tensor<?x6xf32>)
  %ys, %hT, %cT = rnn.scan @all_ops inputs(%xs : tensor<5x?x8xf32>)
      init(%h0, %c0 : tensor<?x6xf32>, tensor<?x6xf32>)
      params(%W, %U, %b, %V : tensor<24x8xf32>, tensor<24x6xf32>, tensor<24xf32>, tensor<6x6xbf16>)
      -> outputs(tensor<5x?x6xf32>) states(tensor<?x6xf32>, tensor<?x6xf32>)
  // CHECK: rnn.scan @all_ops reverse inputs({{.*}}) lengths(%{{.*}} : tensor<?xi64>)
  %rys, %rhT, %rcT = rnn.scan @all_ops reverse inputs(%xs : tensor<5x?x8xf32>)
      init(%h0, %c0 : tensor<?x6xf32>, tensor<?x6xf32>)
      params(%W, %U, %b, %V : tensor<24x8xf32>, tensor<24x6xf32>, tensor<24xf32>, tensor<6x6xbf16>)
      lengths(%len : tensor<?xi64>)
      -> outputs(tensor<5x?x6xf32>) states(tensor<?x6xf32>, tensor<?x6xf32>)
  // A cell with a static batch, scanned over a dynamic number of steps.
  // CHECK: rnn.scan @accumulate inputs(%{{.*}} : tensor<?x4x3xf64>) init(%{{.*}} : tensor<4x3xf64>) -> states(tensor<4x3xf64>)
  %acc = rnn.scan @accumulate inputs(%seq4 : tensor<?x4x3xf64>) init(%x4 : tensor<4x3xf64>)
      -> states(tensor<4x3xf64>)
  // CHECK: rnn.step @accumulate inputs(%{{.*}} : tensor<4x3xf64>) states(%{{.*}} : tensor<4x3xf64>) -> states(tensor<4x3xf64>)
  %acc1 = rnn.step @accumulate inputs(%x4 : tensor<4x3xf64>) states(%acc : tensor<4x3xf64>)
      -> states(tensor<4x3xf64>)
  %x0 = tensor.extract_slice %xs[0, 0, 0] [1, 2, 8] [1, 1, 1] : tensor<5x?x8xf32> to tensor<2x8xf32>
  %h2 = tensor.extract_slice %h0[0, 0] [2, 6] [1, 1] : tensor<?x6xf32> to tensor<2x6xf32>
  // A dynamic batch in the cell binds to a static one in the step.
  // CHECK: rnn.step @all_ops inputs(%{{.*}} : tensor<2x8xf32>) states(%{{.*}}, %{{.*}} : tensor<2x6xf32>, tensor<2x6xf32>)
  // CHECK-SAME: -> outputs(tensor<2x6xf32>) states(tensor<2x6xf32>, tensor<2x6xf32>)
  %y1, %h1, %c1 = rnn.step @all_ops inputs(%x0 : tensor<2x8xf32>) states(%h2, %h2 : tensor<2x6xf32>, tensor<2x6xf32>)
      params(%W, %U, %b, %V : tensor<24x8xf32>, tensor<24x6xf32>, tensor<24xf32>, tensor<6x6xbf16>)
      -> outputs(tensor<2x6xf32>) states(tensor<2x6xf32>, tensor<2x6xf32>)
  // CHECK: rnn.concat %{{.*}}, %{{.*}} : tensor<5x?x6xf32>, tensor<5x?x6xf32> -> tensor<5x?x12xf32>
  %bi = rnn.concat %ys, %rys : tensor<5x?x6xf32>, tensor<5x?x6xf32> -> tensor<5x?x12xf32>
  // CHECK: rnn.concat %{{.*}}, %{{.*}} axis 0 : tensor<24x8xf32>, tensor<24x8xf32> -> tensor<48x8xf32>
  %W2 = rnn.concat %W, %W axis 0 : tensor<24x8xf32>, tensor<24x8xf32> -> tensor<48x8xf32>
  // CHECK: rnn.matmul %{{.*}}, %{{.*}} : tensor<5x?x8xf32>, tensor<48x8xf32> -> tensor<5x?x48xf32>
  %proj = rnn.matmul %xs, %W2 : tensor<5x?x8xf32>, tensor<48x8xf32> -> tensor<5x?x48xf32>
  return %ys, %hT : tensor<5x?x6xf32>, tensor<?x6xf32>
}

// CHECK-LABEL: func.func @fused_group
// CHECK: rnn.pointwise(%{{.*}}, %{{.*}}[4], %{{.*}}, %{{.*}}) : tensor<?x8xf32>, tensor<?x1xf32>, tensor<f32> -> tensor<?x4xf32>, tensor<?x4xbf16> {
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK: rnn.row_sum %{{.*}} : f32
// CHECK: rnn.row_max %{{.*}} : f32
// CHECK: rnn.pointwise_yield %{{.*}}, %{{.*}} : f32, bf16
func.func @fused_group(%g: tensor<?x8xf32>, %s: tensor<?x1xf32>, %k: tensor<f32>) -> (tensor<?x4xf32>, tensor<?x4xbf16>) {
  %a, %b = rnn.pointwise(%g, %g[4], %s, %k) : tensor<?x8xf32>, tensor<?x1xf32>, tensor<f32> -> tensor<?x4xf32>, tensor<?x4xbf16> {
  ^bb0(%x: f32, %y: f32, %z: f32, %w: f32):
    %m = arith.mulf %x, %y : f32
    %sum = rnn.row_sum %m : f32
    %max = rnn.row_max %z : f32
    %t = math.tanh %sum : f32
    %u = arith.addf %t, %max : f32
    %v = arith.addf %u, %w : f32
    %h = arith.truncf %v : f32 to bf16
    rnn.pointwise_yield %v, %h : f32, bf16
  }
  return %a, %b : tensor<?x4xf32>, tensor<?x4xbf16>
}

// A group that writes results wider than its [?, 4] iteration space: 4
// pieces of a [?, 16] tensor, one [?, 4], and 2 pieces of a bf16 [?, 8].
// `pieces` is printed only for results of more than one piece.
// CHECK-LABEL: func.func @wide_results
// CHECK: rnn.pointwise(%{{.*}}, %{{.*}}[4], %{{.*}}) : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x16xf32> pieces 4, tensor<?x4xf32>, tensor<?x8xbf16> pieces 2 {
// CHECK: rnn.pointwise_yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32, f32, f32, bf16, bf16
// CHECK-NOT: result_pieces
func.func @wide_results(%g: tensor<?x8xf32>, %d: tensor<?x4xf32>) -> (tensor<?x16xf32>, tensor<?x4xf32>, tensor<?x8xbf16>) {
  %w, %n, %h = rnn.pointwise(%g, %g[4], %d) : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x16xf32> pieces 4, tensor<?x4xf32>, tensor<?x8xbf16> pieces 2 {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %a = arith.mulf %x, %z : f32
    %b = arith.mulf %y, %z : f32
    %t = math.tanh %a : f32
    %u = arith.subf %t, %b : f32
    %x16 = arith.truncf %x : f32 to bf16
    %y16 = arith.truncf %y : f32 to bf16
    rnn.pointwise_yield %a, %b, %t, %u, %z, %x16, %y16 : f32, f32, f32, f32, f32, bf16, bf16
  }
  return %w, %n, %h : tensor<?x16xf32>, tensor<?x4xf32>, tensor<?x8xbf16>
}

// A result of one piece among wide ones prints no `pieces`; a static batch
// and a rank-1 group work the same way.
// CHECK-LABEL: func.func @wide_static
// CHECK: rnn.pointwise(%{{.*}}, %{{.*}}) : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>, tensor<3x12xf32> pieces 3 {
// CHECK: rnn.pointwise(%{{.*}}) : tensor<4xf32> -> tensor<8xf32> pieces 2 {
func.func @wide_static(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<3x4xf32>, tensor<3x12xf32>, tensor<8xf32>) {
  %s, %w = rnn.pointwise(%a, %b) : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>, tensor<3x12xf32> pieces 3 {
  ^bb0(%x: f32, %y: f32):
    %p = arith.addf %x, %y : f32
    rnn.pointwise_yield %p, %x, %y, %p : f32, f32, f32, f32
  }
  %v = rnn.pointwise(%b) : tensor<4xf32> -> tensor<8xf32> pieces 2 {
  ^bb0(%y: f32):
    %n = arith.negf %y : f32
    rnn.pointwise_yield %y, %n : f32, f32
  }
  return %s, %w, %v : tensor<3x4xf32>, tensor<3x12xf32>, tensor<8xf32>
}

// Compare and choose; transposes and unit-dimension reshapes (ONNX's layouts).
// CHECK-LABEL: func.func @select_and_layout
// CHECK: rnn.select gt %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32>, tensor<f32>
// CHECK: rnn.select ne %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?x1xf32>, tensor<4xf32>, tensor<?x4xf32>
// CHECK: rnn.transpose %{{.*}} permutation [1, 0, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
// CHECK: rnn.reshape %{{.*}} : tensor<?x?x4xf32> -> tensor<?x1x?x4xf32>
// CHECK: rnn.reshape %{{.*}} : tensor<1x?x4xf32> -> tensor<?x4xf32>
func.func @select_and_layout(%x: tensor<?x4xf32>, %r: tensor<?x1xf32>, %v: tensor<4xf32>,
                             %xs: tensor<?x?x4xf32>, %h: tensor<1x?x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x4xf32>) {
  %alpha = rnn.constant 1.5 : tensor<f32>
  %zero = rnn.constant 0.0 : tensor<f32>
  %t = rnn.select gt %x, %alpha, %x, %zero : tensor<?x4xf32>, tensor<f32>, tensor<?x4xf32>, tensor<f32>
  %s = rnn.select ne %t, %r, %v, %x : tensor<?x4xf32>, tensor<?x1xf32>, tensor<4xf32>, tensor<?x4xf32>
  %bt = rnn.transpose %xs permutation [1, 0, 2] : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %y = rnn.reshape %bt : tensor<?x?x4xf32> -> tensor<?x1x?x4xf32>
  %h2 = rnn.reshape %h : tensor<1x?x4xf32> -> tensor<?x4xf32>
  return %t, %s, %y, %h2 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x4xf32>
}

// Head-wise products: 2 heads of 4 units, 3 gates (R is [2, 12, 4]); the
// transposed form; bf16 operands with an f32 result; the weight gradient.
// CHECK-LABEL: func.func @headwise
// CHECK: rnn.headwise_matmul %{{.*}}, %{{.*}} gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
// CHECK: rnn.headwise_matmul %{{.*}}, %{{.*}} gates 3 transposed allow_tf32 : tensor<?x24xf32>, tensor<2x12x4xf32> -> tensor<?x8xf32>
// CHECK: rnn.headwise_matmul %{{.*}}, %{{.*}} gates 1 : tensor<5x?x8xbf16>, tensor<2x4x4xbf16> -> tensor<5x?x8xf32>
// CHECK: rnn.headwise_outer_sum %{{.*}}, %{{.*}} gates 3 allow_tf32 : tensor<?x24xf32>, tensor<?x8xf32> -> tensor<2x12x4xf32>
func.func @headwise(%h: tensor<?x8xf32>, %R: tensor<2x12x4xf32>, %xs: tensor<5x?x8xbf16>,
                    %V: tensor<2x4x4xbf16>)
    -> (tensor<?x8xf32>, tensor<5x?x8xf32>, tensor<2x12x4xf32>) {
  %g = rnn.headwise_matmul %h, %R gates 3 : tensor<?x8xf32>, tensor<2x12x4xf32> -> tensor<?x24xf32>
  %dh = rnn.headwise_matmul %g, %R gates 3 transposed allow_tf32 : tensor<?x24xf32>, tensor<2x12x4xf32> -> tensor<?x8xf32>
  %p = rnn.headwise_matmul %xs, %V gates 1 : tensor<5x?x8xbf16>, tensor<2x4x4xbf16> -> tensor<5x?x8xf32>
  %dR = rnn.headwise_outer_sum %g, %h gates 3 allow_tf32 : tensor<?x24xf32>, tensor<?x8xf32> -> tensor<2x12x4xf32>
  return %dh, %p, %dR : tensor<?x8xf32>, tensor<5x?x8xf32>, tensor<2x12x4xf32>
}
