"""The kernel launched in clusters (lowering option ``cluster_size``).

The kernel's entry says ``.explicitcluster`` and ``.reqnctapercluster N, 1,
1`` only with the option, so that a plain launch runs it in clusters of N;
a grid that is not whole clusters is a one-line error when it is lowered.
The persistent kernel's CTAs wait on each other, so the CUDA backend asks
the driver how many clusters can be resident at once and refuses a program
that would leave some CTA waiting for an SM (checked here against a stand-in
driver). On the GPU, programs give the same bytes in clusters as without.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from ml_dtypes import bfloat16

import vdir
from vdir.device_runtime import cuda as cuda_backend
from vdir.device_runtime.platform import PlatformError
from vdir.frontend import examples
from vdir.lowering.emit import LoweredKernel, lower_to_ptx
from vdir.lowering.options import CLUSTER_SIZES, LoweringOptionError, LoweringOptions
from vdir.testing.gpu import gpu
from vdir.transforms.pipeline import compile_to_encoded


def _gemv(num_sms: int = 8):
    return compile_to_encoded(examples.build_gemv(2048, 1024), num_sms=num_sms)


def test_the_entry_asks_for_clusters_only_with_the_option():
    program = _gemv()
    assert LoweringOptions().cluster_size == 1
    assert ".reqnctapercluster" not in lower_to_ptx(program) and ".explicitcluster" not in lower_to_ptx(program)
    for size in CLUSTER_SIZES[1:]:
        head = lower_to_ptx(program, options={"cluster_size": size}).split("{", 1)[0]
        assert head.endswith(f".minnctapersm 1\n.explicitcluster\n.reqnctapercluster {size}, 1, 1\n"), head


def test_a_grid_of_part_clusters_is_refused_when_lowered():
    with pytest.raises(LoweringOptionError, match="cluster_size=4 needs a grid of whole clusters; the program runs "
                                                  "on 6 SMs"):
        lower_to_ptx(_gemv(6), options={"cluster_size": 4})


def _stand_in_driver(clusters: int, seen: list):
    """A driver whose occupancy query answers ``clusters`` and records the configuration it was asked about."""

    def occupancy(fn, config):
        seen.append(config)
        return (0, clusters)

    return SimpleNamespace(CUlaunchConfig=SimpleNamespace, cuOccupancyMaxActiveClusters=occupancy,
                           CUresult=SimpleNamespace(CUDA_SUCCESS=0))


@pytest.mark.parametrize("clusters, fits", [(66, True), (65, False), (33, False)])
def test_the_backend_refuses_clusters_that_cannot_all_be_resident(monkeypatch, clusters, fits):
    seen: list = []
    monkeypatch.setattr(cuda_backend, "_driver", lambda: _stand_in_driver(clusters, seen))
    kernel = LoweredKernel(ptx="", name="k", block_threads=352, grid=132, dynamic_smem=200_000, families=[],
                           stream_ring=2)
    if fits:
        cuda_backend._require_resident_clusters(None, kernel, 2, "stream")
    else:
        with pytest.raises(PlatformError, match=rf"cluster_size=2: at most {clusters} clusters \({2 * clusters} CTAs\)"
                                                rf" of this kernel are resident at once, and all 132 of its CTAs must "
                                                rf"be; use a smaller cluster_size or compile the program for at most "
                                                rf"{2 * clusters} SMs"):
            cuda_backend._require_resident_clusters(None, kernel, 2, "stream")
    (config,) = seen
    assert (config.gridDimX, config.blockDimX, config.sharedMemBytes, config.hStream) == (132, 352, 200_000, "stream")
    assert config.numAttrs == 0


# ---------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------

def _outputs(program, inputs, options) -> list[np.ndarray]:
    with vdir.compile(program, backend="cuda", options=options) as exe:
        out = exe(**inputs)
        outs = out.values() if isinstance(out, dict) else [out]
        return [np.array(o) for o in outs]


def _inputs(program, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {b.name: (rng.standard_normal(b.shape, dtype=np.float32) / 8).astype(
        bfloat16 if b.dtype == "bf16" else np.float32) for b in program.buffers if b.is_input}


@gpu
@pytest.mark.parametrize("case", ["gemv", "stack"])
def test_programs_give_the_same_bytes_in_clusters(case):
    """8 SMs: every cluster size divides the grid, and 8 CTAs are resident in any of them."""
    program = _gemv() if case == "gemv" else compile_to_encoded(examples.build_mlp_stack(2, 256, 512), num_sms=8)
    inputs = _inputs(program, 3)
    want = _outputs(program, inputs, None)
    for size in CLUSTER_SIZES[1:]:
        got = _outputs(program, inputs, {"cluster_size": size})
        for w, g in zip(want, got, strict=True):
            assert np.array_equal(w.view(np.uint8), g.view(np.uint8)), size


@gpu
def test_a_whole_gpu_program_in_clusters_of_two():
    """Every SM's CTA in clusters of two: the same bytes, or the backend's refusal naming what fits."""
    program = compile_to_encoded(examples.build_gemv(8192, 1024))
    inputs = _inputs(program, 4)
    want = _outputs(program, inputs, None)
    try:
        got = _outputs(program, inputs, {"cluster_size": 2})
    except PlatformError as e:
        assert f"all {program.num_sms} of its CTAs must be" in str(e)
        pytest.xfail(f"not resident in clusters of two on this GPU: {e}")
    for w, g in zip(want, got, strict=True):
        assert np.array_equal(w.view(np.uint8), g.view(np.uint8))
