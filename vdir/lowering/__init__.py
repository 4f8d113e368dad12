"""Lowering of an encoded program to PTX.

:func:`lower_to_ptx` is the entry point (``vdir-opt -t ptx`` and the CUDA
backend call it); :func:`ptx_module` returns the ``ptx``-dialect module before
printing, and :func:`lower` the text together with the launch facts.
"""

from vdir.lowering.emit import LoweredKernel, lower, lower_to_ptx, ptx_module, used_families

__all__ = ["LoweredKernel", "lower", "lower_to_ptx", "ptx_module", "used_families"]
