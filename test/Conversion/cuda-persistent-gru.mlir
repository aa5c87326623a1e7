// REQUIRES: cuda-toolkit
// The bf16 GRU at H = 2048 through the whole CUDA pipeline, its kernels kept
// as PTX text: the recurrence is one persistent kernel whose device-library
// calls are linked and inlined (tensor-core products, bulk copies multicast
// to the cluster, no calls left, registers capped by the 384-thread launch
// bound), launched as clusters; the step loop stays as the fallback when
// the runtime refuses the launch.
// RUN: rnn-compile --target=cuda --gpu-format=isa --emit=mlir %s -o - | FileCheck %s
// Without the persistent kernels, nothing of them is compiled.
// RUN: rnn-compile --target=cuda --gpu-format=isa --emit=mlir --persistent-kernels=false %s -o - | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: llvm.func @gru_seq(
// CHECK: llvm.call @rnn_cuda_require_resident_next_launch()
// CHECK: gpu.launch_func @[[KERNEL:[a-z_0-9]+]]::@{{[a-z_0-9]+}} clusters in
// CHECK: llvm.call @rnn_cuda_take_refused_launch()
// The fallback: the per-step GEMM.
// CHECK: llvm.call @rnn_cuda_gemm
// CHECK: gpu.binary @[[KERNEL]] {{.*}}link = ["{{.*}}rnn_device_library.bc"]{{.*}}maxntid 384, 1, 1
// (In the order the PTX lays them out.)
// CHECK-SAME: red.release.gpu.global.add.u32
// CHECK-SAME: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
// CHECK-SAME: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: call.uni

// OFF-NOT: clusters in
// OFF-NOT: rnn_persistent
// OFF-NOT: mma.sync

rnn.cell @gru inputs(%x: tensor<?x64xbf16>) states(%h: tensor<?x2048xf32>)
    params(%W: tensor<6144x64xbf16>, %U: tensor<6144x2048xbf16>,
           %bW: tensor<6144xf32>, %bU: tensor<6144xf32>) -> (tensor<?x2048xf32>) {
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
  rnn.yield outputs(%hnew : tensor<?x2048xf32>) states(%hnew : tensor<?x2048xf32>)
}
func.func @gru_seq(%xs: tensor<?x?x64xbf16>, %h0: tensor<?x2048xf32>,
                   %W: tensor<6144x64xbf16>, %U: tensor<6144x2048xbf16>, %bW: tensor<6144xf32>, %bU: tensor<6144xf32>)
    -> (tensor<?x?x2048xf32>, tensor<?x2048xf32>) {
  %ys, %hT = rnn.scan @gru inputs(%xs : tensor<?x?x64xbf16>) init(%h0 : tensor<?x2048xf32>)
      params(%W, %U, %bW, %bU : tensor<6144x64xbf16>, tensor<6144x2048xbf16>, tensor<6144xf32>, tensor<6144xf32>)
      -> outputs(tensor<?x?x2048xf32>) states(tensor<?x2048xf32>)
  return %ys, %hT : tensor<?x?x2048xf32>, tensor<?x2048xf32>
}
