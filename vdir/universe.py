"""vdir's dialects, passes and targets as an xDSL plugin (a ``Universe``).

The ``xdsl.universe`` entry point in ``pyproject.toml`` names
:data:`VDIR_UNIVERSE`, so that once vdir is installed the stock ``xdsl-opt``
(and anything else built on xDSL's ``Universe.get_multiverse()``) parses vdir
programs and runs the vdir passes: ``xdsl-opt -p vdir-fuse examples/mlp.mlir``.
Every entry is loaded on first use, so discovering the plugin costs only this
module's import. ``vdir-opt`` registers the same entries from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from xdsl.universe import Universe

from vdir.transforms import PASSES


def _lazy(module: str, name: str) -> Callable[[], Any]:
    """A loader returning ``module.name``, imported when first called."""

    def load() -> Any:
        return getattr(importlib.import_module(module), name)

    return load


#: dialect name -> loader of the dialect
DIALECTS = {
    "vdir": _lazy("vdir.dialects.vdir", "VDIR"),
    "ptx": _lazy("vdir.dialects.ptx", "PTX"),
}

#: target name (``-t``) -> loader of the target class
TARGETS = {
    "ptx": _lazy("vdir.tools.targets", "PTXTarget"),
    "isa": _lazy("vdir.tools.targets", "ISATarget"),
    "queues": _lazy("vdir.tools.targets", "QueuesTarget"),
}

#: The plugin xDSL discovers through the ``xdsl.universe`` entry point group.
VDIR_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES, all_targets=TARGETS)
