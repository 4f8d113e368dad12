"""Lowering options: their defaults, their checks, and what they imply.

Shared by the kernel builder (``vdir.lowering.kernel``), the entry points
(``vdir.lowering.emit``) and the CUDA backend, which builds tensor maps only
when the kernel will use them.
"""

from __future__ import annotations

from vdir.lowering import layout as L

#: lowering options and their defaults: ``split_copies`` = how many bulk
#: copies (one per lane, at most 32) a dense load is cut into; ``load_path``
#: = ``"bulk"`` (cp.async.bulk, completion by transaction bytes) or ``"lsu"``
#: (16-byte cp.async per lane); ``fetch_depth`` = how many instructions the
#: ``lsu``-path load engine prefetches into registers (the other engines use
#: the shared-memory window of ``layout.FETCH_DEPTH``); ``compute_warps`` =
#: warps in the compute group (0: the target's ``compute_threads``);
#: ``tensor_copies`` = 1: loads and stores with a tensor map (``isa.W_TMAP``)
#: use ``cp.async.bulk.tensor``, 0: plain bulk copies and ``st.global``;
#: ``release_fence`` = 0: a counter is released by ``red.release.gpu`` alone
#: (itself a release), 1: with a redundant ``fence.acq_rel.gpu`` before it
LOWERING_OPTIONS = {"split_copies": 1, "load_path": "bulk", "fetch_depth": 8, "compute_warps": 0,
                    "tensor_copies": 1, "release_fence": 0}

#: the most compute warps: a CTA has at most 32 warps, two are the load and store engines
MAX_COMPUTE_WARPS = 32 - L.COMPUTE_FIRST_WARP


def checked_options(options: dict | None) -> dict:
    """``LOWERING_OPTIONS`` updated with ``options``, each checked."""
    opts = dict(LOWERING_OPTIONS)
    for k, v in (options or {}).items():
        if k not in LOWERING_OPTIONS:
            raise ValueError(f"unknown lowering option '{k}' (known: {', '.join(LOWERING_OPTIONS)})")
        opts[k] = v
    if opts["load_path"] not in ("bulk", "lsu"):
        raise ValueError("load_path must be 'bulk' or 'lsu'")
    if not 1 <= int(opts["split_copies"]) <= 32:
        raise ValueError("split_copies must be in 1..32")
    for flag in ("tensor_copies", "release_fence"):
        if int(opts[flag]) not in (0, 1):
            raise ValueError(f"{flag} must be 0 or 1")
    if not 0 <= int(opts["compute_warps"]) <= MAX_COMPUTE_WARPS:
        raise ValueError(f"compute_warps must be in 0..{MAX_COMPUTE_WARPS} (0: the target's)")
    return opts



def tensor_copies_enabled(options: dict | None) -> bool:
    """Whether loads and stores that have a tensor map use it (``tensor_copies``, bulk load path only)."""
    opts = {**LOWERING_OPTIONS, **(options or {})}
    return bool(int(opts["tensor_copies"])) and opts["load_path"] == "bulk"
