"""Experiment: does a layer wavefront pay at deep4 (B = 64, H = 1024)? Chains of
(GEMM + pointwise) steps: one chain; four chains in sequence; four chains on
four streams; one batched GEMM over four layers a step."""
import json, sys, torch

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
dev = "cuda"
T, B, H, L = 100, 64, 1024, 4

def run(dtype):
    U = [torch.randn(4 * H, H, device=dev, dtype=dtype) * 0.02 for _ in range(L)]
    Ub = torch.stack(U)                      # [L, 4H, H]
    P = [torch.randn(T, B, 4 * H, device=dev, dtype=dtype) for _ in range(L)]
    Pb = torch.stack(P, 1)                   # [T, L, B, 4H]
    h = [torch.randn(B, H, device=dev, dtype=dtype) for _ in range(L)]
    hb = torch.stack(h)
    g = [torch.empty(B, 4 * H, device=dev, dtype=dtype) for _ in range(L)]
    gb = torch.empty(L, B, 4 * H, device=dev, dtype=dtype)

    def chain(l, steps=T):
        for t in range(steps):
            torch.addmm(P[l][t], h[l], U[l].t(), out=g[l])
            torch.tanh(g[l][:, :H], out=h[l])

    def one():
        chain(0)

    def seq():
        for l in range(L):
            chain(l)

    streams = [torch.cuda.Stream() for _ in range(L)]

    def conc():
        cur = torch.cuda.current_stream()
        for s in streams:
            s.wait_stream(cur)
        for l in range(L):
            with torch.cuda.stream(streams[l]):
                chain(l)
        for s in streams:
            cur.wait_stream(s)

    def conc_interleaved():
        cur = torch.cuda.current_stream()
        for s in streams:
            s.wait_stream(cur)
        for t in range(T):
            for l in range(L):
                with torch.cuda.stream(streams[l]):
                    torch.addmm(P[l][t], h[l], U[l].t(), out=g[l])
                    torch.tanh(g[l][:, :H], out=h[l])
        for s in streams:
            cur.wait_stream(s)

    def batched():
        for t in range(T):
            torch.baddbmm(Pb[t], hb, Ub.transpose(1, 2), out=gb)
            torch.tanh(gb[:, :, :H], out=hb)

    graphs = {}
    for name, fn in [("one", one), ("seq4", seq), ("streams4", conc),
                     ("streams4_interleaved", conc_interleaved), ("batched4", batched)]:
        fn(); torch.cuda.synchronize()
        gr = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with torch.cuda.graph(gr, stream=s):
                fn()
        torch.cuda.synchronize()
        graphs[name] = gr
    times = {k: [] for k in graphs}
    for r in range(15):
        for k, gr in graphs.items():
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); gr.replay(); b.record(); b.synchronize()
            times[k].append(a.elapsed_time(b))
    res = {}
    for k, v in times.items():
        v = sorted(v)
        res[k] = {"median_ms": v[len(v) // 2], "min": v[0], "max": v[-1]}
    return res

out = {str(d): run(d) for d in (torch.bfloat16, torch.float32)}
print(json.dumps(out, indent=1))
