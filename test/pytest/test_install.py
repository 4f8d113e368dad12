"""The installed package is found from any folder, also one holding a folder named ``vdir``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_folder_named_vdir_does_not_shadow_the_package(tmp_path: Path):
    """From the folder that holds a clone called ``vdir``, ``import vdir`` must still be the package.

    With setuptools' default (strict) editable install the empty-looking
    ``vdir/`` in the current directory wins as a namespace package and
    ``vdir.compile`` is missing; ``.ci/run`` and ``scripts/demo.sh`` install
    in compat mode, which puts the checkout on ``sys.path`` instead.
    """
    (tmp_path / "vdir").mkdir()
    probe = "import vdir; print(vdir.__file__); print(callable(vdir.compile))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(Path(__file__).resolve().parents[2] / "vdir" / "__init__.py"), "True"]
