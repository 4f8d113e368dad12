"""The persistent scheduler kernel, built over the ``ptx`` dialect.

One CTA per SM. Warp 0 is the load engine, warp 1 the store engine, and the
remaining warps (``target.compute_threads`` threads) the compute engine. Each
role walks its own queue of 128-byte instructions (``vdir/isa.py``), waits for
the dependency bits and global counters each instruction names, executes it,
and on completion toggles its signal bits and releases its counter.

The modules, one concern each (the memory-model notes sit in the module that
emits the fences and the acquire/release they justify):

* ``build.py``: :func:`build_kernel`, the prologue and the split into roles;
* ``context.py``: :class:`Ctx`, the registers every role shares;
* ``fetch.py``: an engine's queue, instruction prefetch and field decoding;
* ``sync.py``: waits, signals, the watchdog, the abort flag and error record;
* ``copies.py``: tensor, bulk, ``lsu`` and ``st.global`` copies, the mbarrier ring;
* ``trace.py``: the trace stamps of the lowering option ``trace``;
* ``load_engine.py``, ``store_engine.py``, ``compute_engine.py``: the roles.
"""

from vdir.lowering.kernel.build import build_kernel
from vdir.lowering.kernel.context import Ctx

__all__ = ["Ctx", "build_kernel"]
