#!/usr/bin/env python3
"""On the GPU machine: the runtime's own GEMM kernels, each checked and then
timed against cuBLAS.

* The packed TF32 GEMM (lib/Runtime/Cuda/PackedGemm.h): the recurrent GEMM
  of fp32 models whose weights do not fit in L2 (`wide`), up to 32 rows, in
  the forward and (B stored k x n, whole or as K-slice partials) in the
  backward; RNN_CUDA_PACKED_GEMM=0 turns it off.
* The small-batch GEMV (lib/Runtime/Cuda/SmallBatchGemv.h): GEMMs of up to 8
  rows and 3072 elements of A, rows x K (`small-latency`, fp32 and bf16),
  launched so that it overlaps the
  launches of the step's pointwise kernel; RNN_CUDA_GEMV=0 turns it off.
* The preloaded partials GEMM (lib/Runtime/Cuda/PreloadedPartialsGemm.h): the
  K-split partials of fp32 products of up to 64 rows (the two-stage cells at
  `medium`), launched early with its weights loaded before it waits;
  RNN_CUDA_PRELOADED_GEMM=0 turns it off.

1. Correctness: models against torch.nn.LSTM/GRU in float64 for batch sizes
   on both sides of the kernel's row limit, with the kernel and without it;
   the two runs must differ where the kernel ran (at or under the limit) and
   agree exactly past it (cuBLAS both times). The GEMV also alone, through
   rnn_cuda_gemm, against float64: f32, bf16 and f16 operands, every K size
   class, K and N that do not fill a vector span or a block, padded strides,
   with and without accumulation, and shapes it must leave to cuBLAS.
   The partials alone, through rnn_cuda_gemm_partials, against float64
   slice by slice, with the kernel and without it (results must differ
   where it ran, match where cuBLAS ran both times): every slice width it
   takes, rows and columns that do not fill a tile, padded strides, and
   shapes it must leave to cuBLAS.
   With TRAIN_MODEL_DIR (bench/training-gpu-build.sh's bench-models), the
   packed GEMM in the backward: gradients of the fp32 LSTM and GRU at
   H = 2048 against torch.autograd in float64, the backward run with the
   kernel and without it on the same training forward (results must differ
   where it ran: the whole product under 16 rows, K-slice partials from 16 to
   32; match past 32).
2. Time: the benchmark shapes with and without it, in alternation in one
   process (setting_ab.alternate; medians).

    python3 bench/runtime_gemm_check.py MODEL_DIR [TRAIN_MODEL_DIR]
(bench/gpu-run.sh sets up the library path.)
"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_bench import CudaModel, cuda_runtime, module_args, rel_err, with_setting  # noqa: E402
from setting_ab import alternate  # noqa: E402

# TF32 products (10-bit mantissas) over a few steps; the GEMV sums fp32 products,
# cuBLAS (the runs without it) TF32. bf16 models: bf16 inputs and weights
# against the float64 module.
TOLERANCE = {False: 2e-3, True: 2e-2}


def run(model, name, args, switch, enabled):
    outs = model.outputs(name, args)
    with_setting(lambda: model(name, args, outs), switch, None if enabled else "0")()
    torch.cuda.synchronize()
    return outs


def setup(model_dir, cell, size, seed, T, B, bf16=False):
    gru = cell == "gru"
    dtype = "_bf16" if bf16 else ""
    model = CudaModel(os.path.join(model_dir, f"{cell}{dtype}_I{size}_H{size}.so"))
    torch.manual_seed(seed)
    ref = (torch.nn.GRU if gru else torch.nn.LSTM)(size, size).cuda()
    xs = torch.randn(T, B, size, device="cuda")
    states = [torch.randn(1, B, size, device="cuda") for _ in range(1 if gru else 2)]
    return model, ref, xs, states, module_args(cell, ref, xs, states, 1, bf16)


def check(model_dir, cell, size, batches, switch, max_rows, bf16=False):
    failures = 0
    tolerance = TOLERANCE[bf16]
    for B in batches:
        model, ref, xs, states, args = setup(model_dir, cell, size, 0, 4, B, bf16)
        ref64 = type(ref)(size, size).cuda().double()
        ref64.load_state_dict(ref.state_dict())
        with torch.no_grad():
            expected, _ = ref64(xs.double(), states[0].double() if cell == "gru"
                                else tuple(s.double() for s in states))
        name = f"{cell}_seq"
        on, off = (run(model, name, args, switch, e) for e in (True, False))
        err_on = rel_err(on[0].float().cpu().numpy(), expected.cpu().numpy())
        err_off = rel_err(off[0].float().cpu().numpy(), expected.cpu().numpy())
        same = all(torch.equal(a, b) for a, b in zip(on, off))
        ran = B <= max_rows
        ok = err_on <= tolerance and err_off <= tolerance and same != ran
        failures += not ok
        print(f"  {cell}{' bf16' if bf16 else ''} H={size} B={B:2d}: kernel {'expected' if ran else 'not expected'}, "
              f"rel. error vs float64 {err_on:.1e} ({switch}=0: {err_off:.1e}), "
              f"results {'identical' if same else 'differ'}: {'PASS' if ok else 'FAIL'}")
    return failures


RNN_DTYPE = {torch.float32: 0, torch.bfloat16: 2, torch.float16: 3}
# The GEMV's limit on rows x K (SmallBatchGemv.h's kGemvMaxElements).
GEMV_MAX_ELEMENTS = 3072


def check_gemv_direct():
    """rnn_cuda_gemm on shapes the GEMV takes and on some it must not take.
    f32 cases allow TF32, so an error within fp32 rounding shows that the
    GEMV ran (cuBLAS's TF32 product is ~1e-3 off); bf16/f16 products are
    exact in f32, so every path must be within fp32 rounding there."""
    lib = cuda_runtime()
    lib.rnn_cuda_set_stream(torch.cuda.current_stream().cuda_stream)
    gen = torch.Generator(device="cuda").manual_seed(3)
    failures = 0
    cases = [(m, k, n, dtype, acc)
             for dtype in (torch.float32, torch.bfloat16, torch.float16)
             for m, k, n in ((1, 8, 13), (3, 264, 1024), (8, 1000, 77),
                             (5, 2048, 512), (1, 256, 8),
                             # At and past the limit on rows x K.
                             (3, 1024, 700), (1, 2048, 300), (4, 776, 100))
             for acc in (False, True)]
    # Past the limits: 9 rows, K over 2048 (cuBLAS runs them; rows x K over
    # 3072 among the cases above).
    cases += [(9, 256, 64, torch.float32, False), (2, 2056, 64, torch.float32, True)]
    for m, k, n, dtype, acc in cases:
        lda, ldw, ldc = k + 8, k + 16, n + 3  # Padded rows, 16-byte aligned.
        a = torch.randn(m, lda, device="cuda", generator=gen).to(dtype)
        w = (torch.randn(n, ldw, device="cuda", generator=gen) / k ** 0.5).to(dtype)
        c = torch.randn(m, ldc, device="cuda", generator=gen)
        expected = (a[:, :k].double() @ w[:, :k].double().t()
                    + (c[:, :n].double() if acc else 0))
        flags = 2 | (4 if acc else 0)  # B is n x k, TF32 allowed, accumulate.
        lib.rnn_cuda_gemm(RNN_DTYPE[dtype], 0, flags, m, n, k, a.data_ptr(), lda,
                          w.data_ptr(), ldw, c.data_ptr(), ldc)
        torch.cuda.synchronize()
        message = ctypes.create_string_buffer(512)
        error = lib.rnn_cuda_take_error(message, len(message))
        err = rel_err(c[:, :n].cpu().numpy(), expected.cpu().numpy())
        gemv = m <= 8 and k <= 2048 and m * k <= GEMV_MAX_ELEMENTS
        ok = not error and err <= (1e-5 if gemv else 2e-3)
        failures += not ok
        print(f"  rnn_cuda_gemm {str(dtype)[6:]:8s} m={m} k={k:4d} n={n:4d} "
              f"{'accumulate' if acc else 'overwrite':10s} ({'GEMV' if gemv else 'cuBLAS'}): "
              f"rel. error vs float64 {err:.1e}{' ' + message.value.decode() if error else ''}: "
              f"{'PASS' if ok else 'FAIL'}")
    return failures


def check_partials_direct():
    """rnn_cuda_gemm_partials with TF32 allowed and a constant B, each case
    with the preloaded kernel and without it (cuBLAS): every partial within
    TF32 rounding of float64 both ways, nothing written into the padding of
    C's rows, and the two runs differ exactly where the kernel is expected
    to run."""
    lib = cuda_runtime()
    stream = torch.cuda.current_stream().cuda_stream
    gen = torch.Generator(device="cuda").manual_seed(4)
    failures = 0
    # (m, k, n, slices): slices of 128, 256 and 512; m and n that do not fill
    # a tile; then a slice of 64, 65 rows (cuBLAS).
    cases = [(64, 1024, 1024, 8), (64, 1024, 2048, 4), (64, 2048, 1024, 4),
             (1, 1024, 100, 8), (7, 1024, 1000, 8), (33, 2048, 2048, 8),
             (64, 1024, 1024, 16), (65, 1024, 1024, 8)]
    for m, k, n, slices in cases:
        lda, ldw, ldc = k + 8, k + 4, n + 3  # Padded rows, 16-byte aligned.
        a = torch.randn(m, lda, device="cuda", generator=gen)
        w = torch.randn(n, ldw, device="cuda", generator=gen) / k ** 0.5
        width = k // slices
        expected = torch.stack([a[:, s * width:(s + 1) * width].double()
                                @ w[:, s * width:(s + 1) * width].double().t()
                                for s in range(slices)])
        results, errors = [], []
        for setting in (None, "0"):
            c = torch.full((slices * m * ldc,), float("nan"), device="cuda")

            def partials():
                lib.rnn_cuda_set_stream(stream)  # Reads the setting.
                # A fill in stream order first, as a model call's projection
                # GEMM comes first: the kernel is then launched early (it
                # reads its weights before it waits for the fill).
                lib.mgpuMemset32(c.data_ptr(), 0x7FC00000, c.numel(), stream)
                # B is n x k, TF32 allowed, constant B, once per step.
                lib.rnn_cuda_gemm_partials(0, 0, 2 | 8 | 16, slices, m, n, k,
                                           a.data_ptr(), lda, w.data_ptr(), ldw,
                                           c.data_ptr(), ldc)
            with_setting(partials, "RNN_CUDA_PRELOADED_GEMM", setting)()
            torch.cuda.synchronize()
            message = ctypes.create_string_buffer(512)
            if lib.rnn_cuda_take_error(message, len(message)):
                errors.append(message.value.decode())
            results.append(c.view(slices, m, ldc)[:, :, :n].clone())
            if not torch.isnan(c.view(slices, m, ldc)[:, :, n:]).all():
                errors.append("wrote past column n")
        lib.rnn_cuda_set_stream(stream)
        errs = [rel_err(r.cpu().numpy(), expected.cpu().numpy()) for r in results]
        same = torch.equal(results[0], results[1])
        ran = m <= 64 and width in (128, 256, 512)
        ok = not errors and max(errs) <= 2e-3 and same != ran
        failures += not ok
        print(f"  rnn_cuda_gemm_partials m={m:2d} k={k} n={n:4d} slices={slices:2d} "
              f"(kernel {'expected' if ran else 'not expected'}): rel. error vs float64 "
              f"{errs[0]:.1e} (RNN_CUDA_PRELOADED_GEMM=0: {errs[1]:.1e}), results "
              f"{'identical' if same else 'differ'}{' ' + '; '.join(errors) if errors else ''}: "
              f"{'PASS' if ok else 'FAIL'}")
    return failures


# Gradients through TF32 products over a few steps, largest difference over
# largest value.
GRADIENT_TOLERANCE = 5e-3


def check_packed_backward(train_dir, cell, size, batches, max_rows, T=4):
    """The training model's backward with and without the packed GEMM (after one
    training forward without it) against float64 autograd through torch.nn. cuBLAS's
    own algorithm is pinned (RNN_CUDA_GEMM_CANDIDATE=-1): the two runs' graphs are tuned
    apart and might otherwise pick different algorithms for the same product."""
    return with_setting(
        lambda: _check_packed_backward(train_dir, cell, size, batches, max_rows, T),
        "RNN_CUDA_GEMM_CANDIDATE", "-1")()


def _check_packed_backward(train_dir, cell, size, batches, max_rows, T):
    failures = 0
    model = CudaModel(os.path.join(train_dir, f"{cell}_I{size}_H{size}.so"))
    info = model.model.training_info(f"{cell}_seq")
    for B in batches:
        torch.manual_seed(B)
        ref = (torch.nn.GRU if cell == "gru" else torch.nn.LSTM)(size, size).cuda().double()
        x = torch.randn(T, B, size, device="cuda", dtype=torch.float64)
        states = [torch.randn(B, size, device="cuda", dtype=torch.float64)
                  for _ in range(1 if cell == "gru" else 2)]
        params = [ref.weight_ih_l0, ref.weight_hh_l0, ref.bias_ih_l0, ref.bias_hh_l0]
        args = [t.float().contiguous() for t in [x] + states + [p.detach() for p in params]]
        train_outs = run(model, info.train_function, args, "RNN_CUDA_PACKED_GEMM", False)
        n_results = len(train_outs) - info.num_saved
        result_grads = [torch.randn(o.shape, device="cuda", dtype=torch.float64)
                        for o in train_outs[:n_results]]
        backward_args = args + train_outs + [g.float() for g in result_grads]
        on, off = (run(model, info.backward_function, backward_args,
                       "RNN_CUDA_PACKED_GEMM", e) for e in (True, False))
        leaves = [x.clone().requires_grad_()] + [s.clone().requires_grad_() for s in states]
        initial = (leaves[1].unsqueeze(0) if cell == "gru"
                   else (leaves[1].unsqueeze(0), leaves[2].unsqueeze(0)))
        y, final = ref(leaves[0], initial)
        outs = [y] + ([final] if cell == "gru" else list(final))
        expected = torch.autograd.grad(
            outs, leaves + params,
            [g.reshape(o.shape) for g, o in zip(result_grads, outs)])
        err_on, err_off = (max(rel_err(g.double().cpu().numpy(),
                                       e.reshape(g.shape).cpu().numpy())
                               for g, e in zip(grads, expected)) for grads in (on, off))
        same = all(torch.equal(a, b) for a, b in zip(on, off))
        # From 16 rows the product is 8 K-slice partials, a block per slice and 128
        # columns: the kernel takes them where those blocks fit on the GPU at once.
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        ran = B <= max_rows and (B < 16 or size // 128 * 8 <= sms)
        ok = err_on <= GRADIENT_TOLERANCE and err_off <= GRADIENT_TOLERANCE and same != ran
        failures += not ok
        print(f"  {cell} backward H={size} B={B:2d}: kernel "
              f"{'expected' if ran else 'not expected'}, gradients' rel. error vs float64 "
              f"{err_on:.1e} (RNN_CUDA_PACKED_GEMM=0: {err_off:.1e}), results "
              f"{'identical' if same else 'differ'}: {'PASS' if ok else 'FAIL'}")
    return failures


def ab(model_dir, cell, size, T, B, switch, bf16=False):
    model, _, _, _, args = setup(model_dir, cell, size, 1, T, B, bf16)
    name = f"{cell}_seq"
    outs = model.outputs(name, args)
    on, off = alternate(lambda: model(name, args, outs), switch)
    print(f"  {cell}{' bf16' if bf16 else ''} H={size} T={T} B={B}: with the kernel {on:.3f} ms, "
          f"{switch}=0 {off:.3f} ms, ratio {on / off:.3f}")


def packed_rows(gates, size, backward=False):
    """The most rows the packed kernel takes for this recurrent weight on this GPU: 32 when
    the f32 weight [gates * size, size] fills at least 90 % of L2, 75 % for the backward's
    product (the runtime's rule, PackedGemm.cpp), else 0. The GRU's 48 MiB at H = 2048
    qualify on an H100 (50 MiB L2); on an H200 (60 MiB), in the backward only."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return 32 if gates * size * size * 4 >= l2 - l2 // (4 if backward else 10) else 0


def step_loops(fn):
    """`fn`'s value, with every persistent kernel refused (RNN_CUDA_PERSISTENT=0):
    the recurrences run their step loops, whose products go through the GEMM entry
    points."""
    return with_setting(fn, "RNN_CUDA_PERSISTENT", "0")()


def main(model_dir, train_dir=None):
    packed, gemv = "RNN_CUDA_PACKED_GEMM", "RNN_CUDA_GEMV"
    print("== packed TF32 GEMM: correctness (T=4) against float64")
    failures = check(model_dir, "lstm", 2048, [1, 5, 16, 17, 31, 32, 33], packed,
                     packed_rows(4, 2048))
    failures += check(model_dir, "gru", 2048, [1, 32, 33], packed, packed_rows(3, 2048))
    if train_dir:
        failures += check_packed_backward(train_dir, "lstm", 2048, [1, 5, 16, 17, 32, 33],
                                          packed_rows(4, 2048, backward=True))
        failures += check_packed_backward(train_dir, "gru", 2048, [1, 17, 32, 33],
                                          packed_rows(3, 2048, backward=True))
    # The models run these recurrences as persistent kernels (block kernels at
    # H = 256, the grid-wide kernel at 1024), which issue no GEMM: the GEMV is checked
    # and timed on their step loops.
    print("== small-batch GEMV: correctness (T=4) against float64, step loops "
          "(RNN_CUDA_PERSISTENT=0)")
    failures += step_loops(lambda: (
        check(model_dir, "lstm", 256, [1, 2, 7, 8, 9], gemv, 8)
        + check(model_dir, "gru", 256, [1, 8, 9], gemv, 8)
        + check(model_dir, "lstm", 1024, [1, 3, 4, 9], gemv, GEMV_MAX_ELEMENTS // 1024)
        + check(model_dir, "lstm", 256, [1, 8, 9], gemv, 8, bf16=True)
        + check(model_dir, "gru", 256, [1, 8, 9], gemv, 8, bf16=True)))
    failures += check_gemv_direct()
    print("== preloaded partials GEMM: correctness against float64")
    failures += check_partials_direct()
    print("== packed TF32 GEMM: time (`wide`), in alternation")
    ab(model_dir, "lstm", 2048, 50, 32, packed)
    ab(model_dir, "gru", 2048, 50, 32, packed)
    print("== small-batch GEMV: time (`small-latency`), in alternation, step loops "
          "(RNN_CUDA_PERSISTENT=0)")
    def time_gemv():
        for bf16 in (False, True):
            for cell in ("lstm", "gru"):
                ab(model_dir, cell, 256, 100, 1, gemv, bf16=bf16)
    step_loops(time_gemv)
    if failures:
        sys.exit(f"runtime GEMM check: {failures} FAIL")


if __name__ == "__main__":
    main(*sys.argv[1:3])
