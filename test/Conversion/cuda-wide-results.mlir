// REQUIRES: cuda-toolkit
// Fused groups with wide results through the whole CUDA pipeline.
//
// The bf16 GRU of cuda-persistent-gru.mlir with a [B, 2H] output, the
// concatenation of two of its gates or of h and a gate: its group writes
// the output as a result of 2 pieces.
// RUN: rnn-compile --target=cuda --gpu-format=isa --emit=mlir %s -o - | FileCheck %s
// The LSTM backward step of test/python/models/wide_results.mlir.
// RUN: rnn-compile --target=cuda --gpu-format=isa --emit=mlir %S/../python/models/wide_results.mlir -o - | FileCheck %s --check-prefix=BWD

// Pieces that are outputs alone are computed in their columns of the
// output row, views that the persistent kernel rebuilds every step and
// stores into like any output view: the recurrence is one kernel.
// CHECK-LABEL: llvm.func @gru_rz_seq(
// CHECK: llvm.call @rnn_cuda_require_resident_next_launch()
// CHECK: gpu.launch_func @{{[a-z_0-9]+}}::@{{[a-z_0-9]+}} clusters in
// CHECK: llvm.call @rnn_cuda_take_refused_launch()

// A piece that is also the state (h) is computed in the state's buffer and
// copied into the output row every step; a step loop with a copy is no
// recurrence the persistent kernel runs, so the step loop stays as it is.
// CHECK-LABEL: llvm.func @gru_hz_seq(
// CHECK-NOT: clusters in
// CHECK-NOT: rnn_cuda_require_resident_next_launch
// CHECK: llvm.call @rnn_cuda_gemm
// CHECK-LABEL: gpu.binary

// The two kernels before the loop copy the initial states into the final
// states' buffers, which the steps update. Then the backward step's block
// kernel (the group, which writes the four gate gradients into their
// columns of the step's row of dgates, then dh_{t-1} = dgates U in the
// block), launched in stream order; and as its fallback the step loop: per
// step one kernel (the group) and the GEMM that reads that row and writes
// dh_{t-1} in place. Nothing is allocated.
// BWD-LABEL: llvm.func @lstm_backward_seq(
// BWD: gpu.launch_func
// BWD: gpu.launch_func
// BWD-NOT: mgpuMemAlloc
// BWD: llvm.call @rnn_cuda_persistent_enabled()
// BWD-NOT: llvm.call @rnn_cuda_overlap_next_launch()
// BWD: gpu.launch_func
// BWD: llvm.call @rnn_cuda_order_next_launch()
// BWD: gpu.launch_func
// BWD-NOT: gpu.launch_func
// BWD-NOT: mgpuMemAlloc
// BWD: llvm.call @rnn_cuda_gemm
// BWD-NOT: gpu.launch_func
// BWD-NOT: mgpuMemAlloc
// BWD-LABEL: llvm.func @lstm_backward_lengths(

rnn.cell @gru_rz inputs(%x: tensor<?x64xbf16>) states(%h: tensor<?x2048xf32>)
    params(%W: tensor<6144x64xbf16>, %U: tensor<6144x2048xbf16>,
           %bW: tensor<6144xf32>, %bU: tensor<6144xf32>) -> (tensor<?x4096xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x64xbf16>, tensor<6144x64xbf16> -> tensor<?x6144xf32>
  %h16 = rnn.cast %h : tensor<?x2048xf32> to tensor<?x2048xbf16>
  %uh = rnn.matmul %h16, %U : tensor<?x2048xbf16>, tensor<6144x2048xbf16> -> tensor<?x6144xf32>
  %a = rnn.add %wx, %bW : tensor<?x6144xf32>, tensor<6144xf32>
  %b = rnn.add %uh, %bU : tensor<?x6144xf32>, tensor<6144xf32>
  %xr, %xz, %xn = rnn.split %a : tensor<?x6144xf32> -> tensor<?x2048xf32>, tensor<?x2048xf32>, tensor<?x2048xf32>
  %hr, %hz, %hn = rnn.split %b : tensor<?x6144xf32> -> tensor<?x2048xf32>, tensor<?x2048xf32>, tensor<?x2048xf32>
  %rs = rnn.add %xr, %hr : tensor<?x2048xf32>, tensor<?x2048xf32>
  %r = rnn.sigmoid %rs : tensor<?x2048xf32>
  %zs = rnn.add %xz, %hz : tensor<?x2048xf32>, tensor<?x2048xf32>
  %z = rnn.sigmoid %zs : tensor<?x2048xf32>
  %rh = rnn.mul %r, %hn : tensor<?x2048xf32>, tensor<?x2048xf32>
  %ns = rnn.add %xn, %rh : tensor<?x2048xf32>, tensor<?x2048xf32>
  %n = rnn.tanh %ns : tensor<?x2048xf32>
  %one = rnn.constant 1.0 : tensor<f32>
  %omz = rnn.sub %one, %z : tensor<f32>, tensor<?x2048xf32>
  %a1 = rnn.mul %omz, %n : tensor<?x2048xf32>, tensor<?x2048xf32>
  %a2 = rnn.mul %z, %h : tensor<?x2048xf32>, tensor<?x2048xf32>
  %hnew = rnn.add %a1, %a2 : tensor<?x2048xf32>, tensor<?x2048xf32>
  %out = rnn.concat %r, %z : tensor<?x2048xf32>, tensor<?x2048xf32> -> tensor<?x4096xf32>
  rnn.yield outputs(%out : tensor<?x4096xf32>) states(%hnew : tensor<?x2048xf32>)
}
func.func @gru_rz_seq(%xs: tensor<?x?x64xbf16>, %h0: tensor<?x2048xf32>,
                   %W: tensor<6144x64xbf16>, %U: tensor<6144x2048xbf16>, %bW: tensor<6144xf32>, %bU: tensor<6144xf32>)
    -> (tensor<?x?x4096xf32>, tensor<?x2048xf32>) {
  %ys, %hT = rnn.scan @gru_rz inputs(%xs : tensor<?x?x64xbf16>) init(%h0 : tensor<?x2048xf32>)
      params(%W, %U, %bW, %bU : tensor<6144x64xbf16>, tensor<6144x2048xbf16>, tensor<6144xf32>, tensor<6144xf32>)
      -> outputs(tensor<?x?x4096xf32>) states(tensor<?x2048xf32>)
  return %ys, %hT : tensor<?x?x4096xf32>, tensor<?x2048xf32>
}

rnn.cell @gru_hz inputs(%x: tensor<?x64xbf16>) states(%h: tensor<?x2048xf32>)
    params(%W: tensor<6144x64xbf16>, %U: tensor<6144x2048xbf16>,
           %bW: tensor<6144xf32>, %bU: tensor<6144xf32>) -> (tensor<?x4096xf32>) {
  %wx = rnn.matmul %x, %W : tensor<?x64xbf16>, tensor<6144x64xbf16> -> tensor<?x6144xf32>
  %h16 = rnn.cast %h : tensor<?x2048xf32> to tensor<?x2048xbf16>
  %uh = rnn.matmul %h16, %U : tensor<?x2048xbf16>, tensor<6144x2048xbf16> -> tensor<?x6144xf32>
  %a = rnn.add %wx, %bW : tensor<?x6144xf32>, tensor<6144xf32>
  %b = rnn.add %uh, %bU : tensor<?x6144xf32>, tensor<6144xf32>
  %xr, %xz, %xn = rnn.split %a : tensor<?x6144xf32> -> tensor<?x2048xf32>, tensor<?x2048xf32>, tensor<?x2048xf32>
  %hr, %hz, %hn = rnn.split %b : tensor<?x6144xf32> -> tensor<?x2048xf32>, tensor<?x2048xf32>, tensor<?x2048xf32>
  %rs = rnn.add %xr, %hr : tensor<?x2048xf32>, tensor<?x2048xf32>
  %r = rnn.sigmoid %rs : tensor<?x2048xf32>
  %zs = rnn.add %xz, %hz : tensor<?x2048xf32>, tensor<?x2048xf32>
  %z = rnn.sigmoid %zs : tensor<?x2048xf32>
  %rh = rnn.mul %r, %hn : tensor<?x2048xf32>, tensor<?x2048xf32>
  %ns = rnn.add %xn, %rh : tensor<?x2048xf32>, tensor<?x2048xf32>
  %n = rnn.tanh %ns : tensor<?x2048xf32>
  %one = rnn.constant 1.0 : tensor<f32>
  %omz = rnn.sub %one, %z : tensor<f32>, tensor<?x2048xf32>
  %a1 = rnn.mul %omz, %n : tensor<?x2048xf32>, tensor<?x2048xf32>
  %a2 = rnn.mul %z, %h : tensor<?x2048xf32>, tensor<?x2048xf32>
  %hnew = rnn.add %a1, %a2 : tensor<?x2048xf32>, tensor<?x2048xf32>
  %out = rnn.concat %hnew, %z : tensor<?x2048xf32>, tensor<?x2048xf32> -> tensor<?x4096xf32>
  rnn.yield outputs(%out : tensor<?x4096xf32>) states(%hnew : tensor<?x2048xf32>)
}
func.func @gru_hz_seq(%xs: tensor<?x?x64xbf16>, %h0: tensor<?x2048xf32>,
                   %W: tensor<6144x64xbf16>, %U: tensor<6144x2048xbf16>, %bW: tensor<6144xf32>, %bU: tensor<6144xf32>)
    -> (tensor<?x?x4096xf32>, tensor<?x2048xf32>) {
  %ys, %hT = rnn.scan @gru_hz inputs(%xs : tensor<?x?x64xbf16>) init(%h0 : tensor<?x2048xf32>)
      params(%W, %U, %bW, %bU : tensor<6144x64xbf16>, tensor<6144x2048xbf16>, tensor<6144xf32>, tensor<6144xf32>)
      -> outputs(tensor<?x?x4096xf32>) states(tensor<?x2048xf32>)
  return %ys, %hT : tensor<?x?x4096xf32>, tensor<?x2048xf32>
}
