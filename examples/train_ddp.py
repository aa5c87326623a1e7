#!/usr/bin/env python3
"""DistributedDataParallel over rnn.RNN: nothing of our own, torch's DDP on a torch module.

    torchrun --nproc_per_node=2 examples/train_ddp.py [--steps 20] [--json F]

Each process takes its share of a seeded global batch. After the first step, rank 0 checks
that the gradients DDP averaged equal those of one process on the concatenated batch
(within the dtype's tolerance: 1e-4 relative in float32, 5e-3 with TF32 products); then it
times `--steps` training steps and prints tokens per second (T x global batch / step
time). On GPUs it uses NCCL and one GPU per process; on the CPU, gloo. Across machines,
torchrun's multi-node options (--nnodes, --rdzv-endpoint) are all it takes.

On a machine without rnn-compile, `--module FILE` loads an rnn.RNN saved with torch.save
on a machine that had it, after `module.build("cuda", ...)`: it carries its libraries.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rnn  # noqa: E402


class Tagger(nn.Module):
    """A 2-layer LSTM with a linear read-out: a per-step regression."""

    def __init__(self, recurrent, hidden, outputs):
        super().__init__()
        self.rnn = recurrent
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


def make_model(args, device):
    torch.manual_seed(0)
    if args.module:
        recurrent = torch.load(args.module, weights_only=False)
    else:
        recurrent = rnn.RNN(rnn.zoo.lstm, args.input_size, args.hidden, num_layers=2)
    return Tagger(recurrent, recurrent.hidden_size, 8).to(device)


def global_batch(args, step, device):
    gen = torch.Generator().manual_seed(100 + step)
    x = torch.randn(args.T, args.batch, args.input_size, generator=gen)
    y = torch.randn(args.T, args.batch, 8, generator=gen)
    return x.to(device), y.to(device)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--T", type=int, default=100)
    p.add_argument("--batch", type=int, default=64, help="global batch (split over ranks)")
    p.add_argument("--input-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--module", help="a saved rnn.RNN (torch.save) to use instead of building")
    p.add_argument("--json", help="rank 0 writes its figures here")
    args = p.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        raise SystemExit(f"--batch {args.batch} does not split over {world} processes")
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    share = args.batch // world
    rows = slice(rank * share, (rank + 1) * share)

    model = make_model(args, device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
    loss_fn = nn.MSELoss()

    # One step: DDP's averaged gradients against one process on the whole batch.
    x, y = global_batch(args, 0, device)
    loss_fn(ddp(x[:, rows]), y[:, rows]).backward()
    grads = {n: q.grad.detach().clone() for n, q in model.named_parameters()}
    worst = 0.0
    if rank == 0:
        single = make_model(args, device)
        single.load_state_dict(model.state_dict())
        loss_fn(single(x), y).backward()
        for n, q in single.named_parameters():
            worst = max(worst, ((grads[n] - q.grad).abs().max() /
                                q.grad.abs().max().clamp_min(1e-30)).item())
        print(f"DDP over {world} process(es): gradients after one step within "
              f"{worst:.1e} (relative) of one process on the whole batch")

    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = global_batch(args, 1, device)
    x, y = x[:, rows].contiguous(), y[:, rows].contiguous()
    for step in range(args.steps + 3):
        if step == 3:  # after a warm-up
            if cuda:
                torch.cuda.synchronize()
            dist.barrier()
            start = time.perf_counter()
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    seconds = (time.perf_counter() - start) / args.steps
    tokens = args.T * args.batch / seconds
    if rank == 0:
        device_name = torch.cuda.get_device_name() if cuda else "cpu"
        print(f"{world} x {device_name}: {seconds * 1e3:.2f} ms a step, {tokens:,.0f} tokens/s "
              f"(T={args.T}, global batch {args.batch}, H={args.hidden}, 2 layers)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world_size": world, "device": device_name, "ms_per_step":
                           seconds * 1e3, "tokens_per_s": tokens, "grad_rel_err": worst,
                           "T": args.T, "batch": args.batch, "hidden": args.hidden,
                           "input_size": args.input_size}, f)
    # float32 on CUDA runs TF32 products (PyTorch's default for recurrences), whose
    # GEMMs over one rank's rows and over all rows may round differently.
    dtype = next(model.parameters()).dtype
    # The process group goes down while the interpreter is whole and on every
    # rank together: DDP's reducer (and the work it holds) released first,
    # then a barrier. A rank whose gloo group outlived its destroy call, or
    # went down while the other still wrote its report, now and then aborted
    # at exit ("terminate called without an active exception").
    del opt, ddp
    dist.barrier()
    dist.destroy_process_group()
    tolerance = (1e-10 if dtype == torch.float64 else
                 5e-3 if cuda and torch.backends.cudnn.allow_tf32 else 1e-4)
    return 0 if worst <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
