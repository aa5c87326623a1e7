// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @sru
// CHECK: rnn.matmul {{.*}} : tensor<?x20xf32>, tensor<60x20xf32> -> tensor<?x60xf32>
// CHECK-NOT: rnn.matmul
// CHECK: rnn.yield outputs({{.*}} : tensor<?x20xf32>) states({{.*}} : tensor<?x20xf32>)
// CHECK-LABEL: func.func @sru_seq
// CHECK: rnn.scan @sru inputs({{.*}} : tensor<?x?x20xf32>) init({{.*}} : tensor<?x20xf32>)

// Simple recurrent unit (Lei et al. 2018), I = H = 20. Not in PyTorch: W [3H, I] and
// b [3H] with rows x̃, f, r; v_f, v_r [H] are the diagonal state weights; the only state is c.
//   [x̃,f,r] = W x + b;  f = σ(f + v_f⊙c₋₁);  r = σ(r + v_r⊙c₋₁)
//   c = f⊙c₋₁ + (1−f)⊙x̃;  h = r⊙c + (1−r)⊙x
// Stresses: no recurrent matmul; once W x is hoisted out of the loop the scan is elementwise.

rnn.cell @sru inputs(%x: tensor<?x20xf32>) states(%c: tensor<?x20xf32>)
    params(%W: tensor<60x20xf32>, %b: tensor<60xf32>,
           %v_f: tensor<20xf32>, %v_r: tensor<20xf32>)
    -> (tensor<?x20xf32>) {
  %one = rnn.constant 1.0 : tensor<f32>
  %wx = rnn.matmul %x, %W : tensor<?x20xf32>, tensor<60x20xf32> -> tensor<?x60xf32>
  %gx = rnn.add %wx, %b : tensor<?x60xf32>, tensor<60xf32>
  %xt, %f_x, %r_x = rnn.split %gx : tensor<?x60xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %vf_c = rnn.mul %v_f, %c : tensor<20xf32>, tensor<?x20xf32>
  %f_pre = rnn.add %f_x, %vf_c : tensor<?x20xf32>, tensor<?x20xf32>
  %f = rnn.sigmoid %f_pre : tensor<?x20xf32>
  %vr_c = rnn.mul %v_r, %c : tensor<20xf32>, tensor<?x20xf32>
  %r_pre = rnn.add %r_x, %vr_c : tensor<?x20xf32>, tensor<?x20xf32>
  %r = rnn.sigmoid %r_pre : tensor<?x20xf32>
  %fc = rnn.mul %f, %c : tensor<?x20xf32>, tensor<?x20xf32>
  %one_minus_f = rnn.sub %one, %f : tensor<f32>, tensor<?x20xf32>
  %fx = rnn.mul %one_minus_f, %xt : tensor<?x20xf32>, tensor<?x20xf32>
  %c_new = rnn.add %fc, %fx : tensor<?x20xf32>, tensor<?x20xf32>
  %rc = rnn.mul %r, %c_new : tensor<?x20xf32>, tensor<?x20xf32>
  %one_minus_r = rnn.sub %one, %r : tensor<f32>, tensor<?x20xf32>
  %skip = rnn.mul %one_minus_r, %x : tensor<?x20xf32>, tensor<?x20xf32>
  %h = rnn.add %rc, %skip : tensor<?x20xf32>, tensor<?x20xf32>
  rnn.yield outputs(%h : tensor<?x20xf32>) states(%c_new : tensor<?x20xf32>)
}

func.func @sru_seq(%xs: tensor<?x?x20xf32>, %c0: tensor<?x20xf32>,
                   %W: tensor<60x20xf32>, %b: tensor<60xf32>,
                   %v_f: tensor<20xf32>, %v_r: tensor<20xf32>)
    -> (tensor<?x?x20xf32>, tensor<?x20xf32>) {
  %hs, %cT = rnn.scan @sru inputs(%xs : tensor<?x?x20xf32>)
      init(%c0 : tensor<?x20xf32>)
      params(%W, %b, %v_f, %v_r : tensor<60x20xf32>, tensor<60xf32>, tensor<20xf32>, tensor<20xf32>)
      -> outputs(tensor<?x?x20xf32>) states(tensor<?x20xf32>)
  return %hs, %cT : tensor<?x?x20xf32>, tensor<?x20xf32>
}
