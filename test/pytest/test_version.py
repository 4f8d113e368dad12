"""vdir's version: read from the installed package, and the tools still start from a source tree."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys
from pathlib import Path

import vdir

REPO = Path(__file__).resolve().parents[2]


def test_version_is_the_installed_packages():
    assert vdir.__version__ == metadata.version("vdir") == vdir.installed_version()


def test_version_from_a_source_tree_that_was_not_installed(monkeypatch):
    real = metadata.version

    def not_installed(name: str) -> str:
        if name == "vdir":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert vdir.installed_version() == "unknown"


def test_tools_import_without_the_package_metadata():
    """As on a machine that runs the tools from the tree with PYTHONPATH (no install): the drivers still import."""
    probe = (
        "import importlib.metadata as m\n"
        "real = m.version\n"
        "def v(n):\n"
        "    if n == 'vdir': raise m.PackageNotFoundError(n)\n"
        "    return real(n)\n"
        "m.version = v\n"
        "import vdir.tools.vdir_opt as o, vdir.tools.vdir_run as r\n"
        "print(o.VdirOptMain.version_format)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("vdir-opt unknown (xDSL")
