"""Replace a torch MLP's forward with a vdir executable, on torch tensors, without copies.

A Llama-style MLP block (rmsnorm, gate and up projections, SiLU, down
projection, residual) is written once in torch and compiled once by vdir.
The weights are bound to the executable as the torch tensors that hold them;
each forward passes only the activation and an output tensor, launched on
torch's current stream. Then the vdir launch is captured in a CUDA graph
and replayed. Every result is checked against torch's forward (bf16 inputs,
f32 accumulation on both sides; tolerance below).

    python3 examples/torch_mlp.py [--hidden 2048] [--inter 8192] [--steps 20]

Needs a CUDA GPU (sm_90) and torch; vdir itself does not import torch.
"""

from __future__ import annotations

import argparse
import sys

import torch

import vdir
from vdir.frontend.examples import build_mlp_block

EPS = 1e-5
#: worst |vdir - torch| / max|torch| accepted: both round bf16 intermediates, in different orders
TOLERANCE = 2e-2


class TorchMLP(torch.nn.Module):
    """The reference: out = h + Wd . (silu(Wg . xn) * (Wu . xn)), xn = rmsnorm(h) * g."""

    def __init__(self, hidden: int, inter: int):
        super().__init__()
        bf16 = dict(dtype=torch.bfloat16, device="cuda")
        self.g = torch.nn.Parameter(1 + 0.1 * torch.randn(1, hidden, **bf16), requires_grad=False)
        self.wg = torch.nn.Parameter(torch.randn(inter, hidden, **bf16) * hidden**-0.5, requires_grad=False)
        self.wu = torch.nn.Parameter(torch.randn(inter, hidden, **bf16) * hidden**-0.5, requires_grad=False)
        self.wd = torch.nn.Parameter(torch.randn(hidden, inter, **bf16) * inter**-0.5, requires_grad=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        hf = h.float()
        xn = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS)).bfloat16() * self.g
        gate, up = xn @ self.wg.t(), xn @ self.wu.t()
        return h + (torch.nn.functional.silu(gate.float()).bfloat16() * up) @ self.wd.t()


class VdirMLP:
    """The same forward as one vdir launch: weights bound once, activations passed per call."""

    def __init__(self, model: TorchMLP, hidden: int, inter: int):
        self.exe = vdir.compile(build_mlp_block(hidden, inter, eps=EPS), backend="cuda")
        for name in ("g", "wg", "wu", "wd"):  # resident: the executable holds the torch tensors
            self.exe.bind_buffer(name, getattr(model, name).data)

    def __call__(self, h: torch.Tensor, out: torch.Tensor) -> None:
        self.exe.launch(h=h, out=out, stream=torch.cuda.current_stream())


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).abs().max() / want.float().abs().max())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--inter", type=int, default=8192)
    p.add_argument("--steps", type=int, default=20)
    opts = p.parse_args(argv)
    torch.manual_seed(0)
    model = TorchMLP(opts.hidden, opts.inter)
    fast = VdirMLP(model, opts.hidden, opts.inter)
    h = torch.randn(1, opts.hidden, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(h)
    worst = 0.0
    with torch.no_grad():
        for _ in range(opts.steps):  # eager: a loop on torch's current stream
            h.normal_()
            fast(h, out)
            worst = max(worst, relative_error(out, model(h)))
        graph = torch.cuda.CUDAGraph()  # captured once, replayed with new activations
        with torch.cuda.graph(graph):
            fast(h, out)
        for _ in range(opts.steps):
            h.normal_()
            graph.replay()
            worst = max(worst, relative_error(out, model(h)))
    fast.exe.synchronize()  # device errors, if any, are raised here
    fast.exe.close()
    status = "PASS" if worst <= TOLERANCE else "FAIL"
    print(f"{status}: {2 * opts.steps} forwards (eager and graph-replayed), worst relative error {worst:.2e} "
          f"(tolerance {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
