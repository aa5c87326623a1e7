// REQUIRES: cuda-toolkit
// The f32 LSTM at H = 1024 whose matmuls allow TF32, through the whole CUDA
// pipeline, its kernels kept as PTX text: the recurrence is one persistent
// kernel of the device library's TF32 layout (128 blocks of 8 units, 512
// threads) whose library calls are linked and inlined (TF32 tensor-core
// products of f32 staged rows, no calls left); without TF32 the step loop
// stays (the library has no full-precision f32 product).
// RUN: rnn-compile --target=cuda --gpu-format=isa --emit=mlir %s -o - | FileCheck %s
// RUN: sed 's/ allow_tf32//' %s | rnn-compile --target=cuda --gpu-format=isa --emit=mlir - -o - | FileCheck %s --check-prefix=FP32

// CHECK-LABEL: llvm.func @lstm_seq(
// CHECK: llvm.call @rnn_cuda_persistent_batch_tiles
// CHECK: gpu.launch_func @[[KERNEL:[a-z_0-9]+]]::@{{[a-z_0-9]+}} clusters in
// CHECK: llvm.call @rnn_cuda_take_refused_launch()
// CHECK: gpu.binary @[[KERNEL]] {{.*}}link = ["{{.*}}rnn_device_library.bc"]{{.*}}maxntid 512, 1, 1
// (In the order the PTX lays them out: the low-latency exchange's 8-byte
// words, stored and polled, then the counter's path.)
// CHECK-SAME: cvt.rna.tf32.f32
// CHECK-SAME: st.relaxed.gpu.global.b64
// CHECK-SAME: ld.relaxed.gpu.global.b64
// CHECK-SAME: mbarrier.arrive.shared::cta.b64
// CHECK-SAME: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
// CHECK-SAME: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-SAME: ld.shared.v2.b32
// CHECK-SAME: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK-SAME: red.release.gpu.global.add.u32
// CHECK-NOT: call.uni

// FP32-NOT: rnn_cuda_persistent_batch_tiles
// FP32-NOT: mma.sync

rnn.cell @lstm inputs(%x: tensor<?x1024xf32>)
    states(%h: tensor<?x1024xf32>, %c: tensor<?x1024xf32>)
    params(%W: tensor<4096x1024xf32>, %U: tensor<4096x1024xf32>,
           %bW: tensor<4096xf32>, %bU: tensor<4096xf32>) -> (tensor<?x1024xf32>) {
  %wx = rnn.matmul %x, %W allow_tf32 : tensor<?x1024xf32>, tensor<4096x1024xf32> -> tensor<?x4096xf32>
  %uh = rnn.matmul %h, %U allow_tf32 : tensor<?x1024xf32>, tensor<4096x1024xf32> -> tensor<?x4096xf32>
  %a = rnn.add %wx, %bW : tensor<?x4096xf32>, tensor<4096xf32>
  %b = rnn.add %uh, %bU : tensor<?x4096xf32>, tensor<4096xf32>
  %g = rnn.add %a, %b : tensor<?x4096xf32>, tensor<?x4096xf32>
  %i, %f, %z, %o = rnn.split %g : tensor<?x4096xf32>
      -> tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>
  %si = rnn.sigmoid %i : tensor<?x1024xf32>
  %sf = rnn.sigmoid %f : tensor<?x1024xf32>
  %tz = rnn.tanh %z : tensor<?x1024xf32>
  %so = rnn.sigmoid %o : tensor<?x1024xf32>
  %fc = rnn.mul %sf, %c : tensor<?x1024xf32>, tensor<?x1024xf32>
  %iz = rnn.mul %si, %tz : tensor<?x1024xf32>, tensor<?x1024xf32>
  %cn = rnn.add %fc, %iz : tensor<?x1024xf32>, tensor<?x1024xf32>
  %tc = rnn.tanh %cn : tensor<?x1024xf32>
  %hn = rnn.mul %so, %tc : tensor<?x1024xf32>, tensor<?x1024xf32>
  rnn.yield outputs(%hn : tensor<?x1024xf32>) states(%hn, %cn : tensor<?x1024xf32>, tensor<?x1024xf32>)
}
func.func @lstm_seq(%xs: tensor<?x?x1024xf32>, %h0: tensor<?x1024xf32>, %c0: tensor<?x1024xf32>,
                    %W: tensor<4096x1024xf32>, %U: tensor<4096x1024xf32>, %bW: tensor<4096xf32>, %bU: tensor<4096xf32>)
    -> (tensor<?x?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>) {
  %ys, %hT, %cT = rnn.scan @lstm inputs(%xs : tensor<?x?x1024xf32>)
      init(%h0, %c0 : tensor<?x1024xf32>, tensor<?x1024xf32>)
      params(%W, %U, %bW, %bU : tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096xf32>, tensor<4096xf32>)
      -> outputs(tensor<?x?x1024xf32>) states(tensor<?x1024xf32>, tensor<?x1024xf32>)
  return %ys, %hT, %cT : tensor<?x?x1024xf32>, tensor<?x1024xf32>, tensor<?x1024xf32>
}
