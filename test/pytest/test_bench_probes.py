"""The standalone CUDA probes of ``bench/``, without a GPU.

Each probe (``bench/*.cu``) is built and run on the GPU machine by a step of
``bench/run_all.sh`` (``cuda_probe STEP NAME``). These tests keep every probe
reachable from a step and compiling for ``sm_90a`` (host and device code,
with ``nvcc`` where this machine has it), so that a probe found broken does
not cost a GPU run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
PROBES = sorted(BENCH.glob("*.cu"))
#: ``cuda_probe STEP NAME`` in run_all.sh: a step that builds and runs ``bench/NAME.cu``
_STEP = re.compile(r"^\s*[\w-]+\)\s*cuda_probe\s+[\w-]+\s+(?P<name>\w+)\s*;;", re.MULTILINE)


def test_there_are_probes():
    assert len(PROBES) >= 8, [p.name for p in PROBES]


def test_every_probe_has_a_run_all_step():
    stepped = {m["name"] for m in _STEP.finditer((BENCH / "run_all.sh").read_text())}
    assert stepped == {p.stem for p in PROBES}


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.stem)
def test_the_probe_compiles_for_sm_90a(probe, tmp_path):
    done = subprocess.run(["nvcc", "-arch=sm_90a", "-O3", "-c", "-o", str(tmp_path / "probe.o"), str(probe)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
