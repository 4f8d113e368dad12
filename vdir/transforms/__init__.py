"""vdir -> vdir passes, one per file, and their registry for ``vdir-opt``.

Order of the pipeline (``vdir-pipeline`` runs them all): ``vdir-verify-deps``,
``vdir-fuse``, ``vdir-place``, ``vdir-schedule``, ``vdir-alloc-smem``,
``vdir-layout-deps``, ``vdir-encode``.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(module), cls)

    return load


#: pass name -> factory returning the pass class (imported on first use)
PASSES: dict[str, Callable[[], type[ModulePass]]] = {}

for _name, _module, _cls in (
    ("vdir-verify-deps", "vdir.transforms.verify_deps", "VerifyDepsPass"),
    ("vdir-fuse", "vdir.transforms.fuse", "FusePass"),
    ("vdir-place", "vdir.transforms.place", "PlacePass"),
    ("vdir-schedule", "vdir.transforms.schedule", "SchedulePass"),
    ("vdir-alloc-smem", "vdir.transforms.alloc_smem", "AllocSmemPass"),
    ("vdir-flag-words", "vdir.transforms.flag_words", "FlagWordsPass"),
    ("vdir-hold-streams", "vdir.transforms.hold_streams", "HoldStreamsPass"),
    ("vdir-layout-deps", "vdir.transforms.layout_deps", "LayoutDepsPass"),
    ("vdir-encode", "vdir.transforms.encode", "EncodePass"),
    ("vdir-pipeline", "vdir.transforms.pipeline", "PipelinePass"),
):
    PASSES[_name] = _lazy(_module, _cls)
