"""The shape sweep's command line, without a GPU (``bench/bench_sweep.py``)."""

from __future__ import annotations

import pytest

from bench import bench_sweep as sweep
from vdir.frontend.layers import WEIGHT_TILE_BYTES


@pytest.mark.parametrize("value", ["0", "-4096"])
def test_a_tile_limit_that_is_not_positive_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as stop:
        sweep.main(["--tile-bytes", value])
    assert stop.value.code == 2
    assert f"--tile-bytes must be positive, not {value}" in capsys.readouterr().err


def test_a_tile_limit_with_the_simulator_is_a_usage_error(capsys):
    """``--sim`` scales the limit down with its shapes: a limit given with it is refused, not ignored."""
    with pytest.raises(SystemExit) as stop:
        sweep.main(["--sim", "--tile-bytes", "4096"])
    assert stop.value.code == 2
    assert "--tile-bytes applies on the GPU" in capsys.readouterr().err


def test_the_tile_limit_changes_the_tiling_the_sweep_compiles():
    """``tiling``, which the sweep's compile pool calls with the run's limit, follows it: a smaller
    limit splits a gemv's tiles (that ``gpu_main`` hands ``--tile-bytes`` to the pool needs a GPU)."""
    case = sweep.Case("gemv", 2048, 2048)
    assert sweep.tiling(case, WEIGHT_TILE_BYTES) == {"rows": 16, "k_chunks": 1}
    assert sweep.tiling(case, WEIGHT_TILE_BYTES // 2) == {"rows": 8, "k_chunks": 1}
    assert sweep.tiling(case, WEIGHT_TILE_BYTES // 4) == {"rows": 8, "k_chunks": 2}
