// RUN: rnn-opt %s > %t.pretty && rnn-opt %t.pretty > %t.again && diff %t.pretty %t.again
// RUN: rnn-opt %s --mlir-print-op-generic | rnn-opt > %t.generic && diff %t.pretty %t.generic
// RUN: rnn-opt %s | FileCheck %s
// CHECK-LABEL: rnn.cell @lstmp
// CHECK-SAME: states({{.*}}: tensor<?x12xf32>, {{.*}}: tensor<?x20xf32>)
// CHECK: rnn.matmul {{.*}} : tensor<?x12xf32>, tensor<80x12xf32> -> tensor<?x80xf32>
// CHECK: rnn.matmul {{.*}} : tensor<?x20xf32>, tensor<12x20xf32> -> tensor<?x12xf32>
// CHECK-NEXT: rnn.yield outputs({{.*}} : tensor<?x12xf32>) states({{.*}} : tensor<?x12xf32>, tensor<?x20xf32>)
// CHECK: rnn.scan @lstmp {{.*}} -> outputs(tensor<?x?x12xf32>) states(tensor<?x12xf32>, tensor<?x20xf32>)

// LSTM with a projection (torch.nn.LSTM with proj_size), I = 10, H = 20, P = 12.
//   [i,f,g,o] = W x + b_W + U r₋₁ + b_U;  c = σ(f)⊙c₋₁ + σ(i)⊙tanh(g);  r = W_hr (σ(o)⊙tanh(c))
// The states are r [B, P] (PyTorch's h) and c [B, H]; U is [4H, P] and W_hr [P, H].
// Stresses: a matmul after the pointwise stage, on the critical path of the recurrence.

rnn.cell @lstmp inputs(%x: tensor<?x10xf32>)
    states(%r: tensor<?x12xf32>, %c: tensor<?x20xf32>)
    params(%W: tensor<80x10xf32>, %U: tensor<80x12xf32>,
           %b_W: tensor<80xf32>, %b_U: tensor<80xf32>, %W_hr: tensor<12x20xf32>)
    -> (tensor<?x12xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x10xf32>, tensor<80x10xf32> -> tensor<?x80xf32>
  %wxb = rnn.add %wx, %b_W : tensor<?x80xf32>, tensor<80xf32>
  %ur = rnn.matmul %r, %U : tensor<?x12xf32>, tensor<80x12xf32> -> tensor<?x80xf32>
  %urb = rnn.add %ur, %b_U : tensor<?x80xf32>, tensor<80xf32>
  %gates = rnn.add %wxb, %urb : tensor<?x80xf32>, tensor<?x80xf32>
  %i, %f, %g, %o = rnn.split %gates : tensor<?x80xf32>
      -> tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>, tensor<?x20xf32>
  %si = rnn.sigmoid %i : tensor<?x20xf32>
  %sf = rnn.sigmoid %f : tensor<?x20xf32>
  %tg = rnn.tanh %g : tensor<?x20xf32>
  %so = rnn.sigmoid %o : tensor<?x20xf32>
  %fc = rnn.mul %sf, %c : tensor<?x20xf32>, tensor<?x20xf32>
  %ig = rnn.mul %si, %tg : tensor<?x20xf32>, tensor<?x20xf32>
  %c_new = rnn.add %fc, %ig : tensor<?x20xf32>, tensor<?x20xf32>
  %tc = rnn.tanh %c_new : tensor<?x20xf32>
  %h = rnn.mul %so, %tc : tensor<?x20xf32>, tensor<?x20xf32>
  %r_new = rnn.matmul %h, %W_hr : tensor<?x20xf32>, tensor<12x20xf32> -> tensor<?x12xf32>
  rnn.yield outputs(%r_new : tensor<?x12xf32>)
      states(%r_new, %c_new : tensor<?x12xf32>, tensor<?x20xf32>)
}

func.func @lstmp_seq(%xs: tensor<?x?x10xf32>, %r0: tensor<?x12xf32>, %c0: tensor<?x20xf32>,
                     %W: tensor<80x10xf32>, %U: tensor<80x12xf32>,
                     %b_W: tensor<80xf32>, %b_U: tensor<80xf32>, %W_hr: tensor<12x20xf32>)
    -> (tensor<?x?x12xf32>, tensor<?x12xf32>, tensor<?x20xf32>) {
  %ys, %rT, %cT = rnn.scan @lstmp inputs(%xs : tensor<?x?x10xf32>)
      init(%r0, %c0 : tensor<?x12xf32>, tensor<?x20xf32>)
      params(%W, %U, %b_W, %b_U, %W_hr
             : tensor<80x10xf32>, tensor<80x12xf32>, tensor<80xf32>, tensor<80xf32>, tensor<12x20xf32>)
      -> outputs(tensor<?x?x12xf32>) states(tensor<?x12xf32>, tensor<?x20xf32>)
  return %ys, %rT, %cT : tensor<?x?x12xf32>, tensor<?x12xf32>, tensor<?x20xf32>
}
