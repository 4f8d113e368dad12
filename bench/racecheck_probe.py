"""Which shared-memory hand-offs does compute-sanitizer racecheck recognise?

Run under ``compute-sanitizer --tool racecheck python3 bench/racecheck_probe.py``
on a GPU. Each kernel (two warps, one CTA) moves 1 KiB through shared memory
from a producer warp to a consumer warp with one synchronisation pattern, the
consumer checks the bytes, and then the consumer hands the buffer back and
the producer overwrites it (the write-after-read direction). The racecheck
report names the kernels whose pattern it does not model; the script itself
checks that every kernel moved the right bytes.

Patterns (kernel names):

* ``flag_bits``: generic stores, ``atom.release.cta`` on a flag word,
  ``ld.acquire.cta`` spin (the persistent kernel's dependency bits);
* ``mbar_thread``: generic stores, ``mbarrier.arrive`` / ``try_wait.parity``;
* ``bulk_direct``: a ``cp.async.bulk`` copy, the consumer waits on the copy's
  mbarrier itself;
* ``bulk_mbar_hop``: the producer waits on the copy's mbarrier, then arrives
  on a second mbarrier that the consumer waits on;
* ``bulk_flag_hop``: the same with a release/acquire flag as the second hop
  (the persistent kernel's load engine today);
* ``tensor_flag_hop``: as ``bulk_flag_hop`` with a tensor copy
  (``cp.async.bulk.tensor``, a tensor map in global memory), and a second
  tensor copy for the write-after-read;
* ``tensor_store``: generic stores, a flag, then a tensor store to global
  memory by the consumer (the store path), and generic stores after it.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

HEADER = """.version 8.0
.target sm_90a
.address_size 64
"""

# shared layout: buf[1024] at 0, flag u64 at 1024, mbar0 at 1032, mbar1 at 1040, back u64 at 1048
PROLOGUE = """
.visible .entry {name}(.param .u64 p_src, .param .u64 p_out, .param .u64 p_tsrc, .param .u64 p_tout)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<32>;
  .shared .align 128 .b8 sm[1152];
  ld.param.u64 %rd1, [p_src];
  ld.param.u64 %rd2, [p_out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  ld.param.u64 %rd20, [p_tsrc];   // generic addresses of the tensor maps
  ld.param.u64 %rd21, [p_tout];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;          // warp
  and.b32 %r3, %r1, 31;         // lane
  mov.u32 %r4, sm;              // buf
  shl.b32 %r5, %r3, 2;
  add.u32 %r6, %r4, %r5;        // &buf[lane] (u32 words, 4 per lane in 4 passes)
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.shared.u64 [%r4+1024], 0;
  @%p1 st.shared.u64 [%r4+1048], 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r4+1032], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r4+1040], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  @%p1 fence.proxy.async.shared::cta;
  bar.sync 0;
  setp.eq.u32 %p2, %r3, 0;      // lane 0
  setp.ne.u32 %p3, %r2, 0;
  @%p3 bra CONSUMER;
"""

GEN_WRITE = """
  // producer: generic stores of src words into buf
  mul.wide.u32 %rd3, %r5, 1;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r7, [%rd4];
  st.shared.u32 [%r6], %r7;
  ld.global.u32 %r7, [%rd4+128];
  st.shared.u32 [%r6+128], %r7;
  bar.warp.sync -1;
"""

BULK_WRITE = """
  // producer: one bulk copy of 256 bytes (lane 0), completion on mbar0
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r4+1032], 256;
  add.u32 %r8, %r4, 1032;
  @%p2 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd1], 256, [%r8];
  bar.warp.sync -1;
"""

WAIT_MBAR0_PRODUCER = """
PW0:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4+1032], 0;
  @!%p4 bra PW0;
"""

SIGNAL_FLAG = """
  @%p2 atom.release.cta.shared.xor.b64 %rd6, [%r4+1024], 1;
"""

SIGNAL_MBAR1 = """
  @%p2 mbarrier.arrive.release.cta.shared::cta.b64 %rd6, [%r4+1040];
"""

SIGNAL_MBAR0 = """
  @%p2 mbarrier.arrive.release.cta.shared::cta.b64 %rd6, [%r4+1032];
"""

# the producer then waits for the consumer's hand-back and overwrites buf (WAR)
TENSOR_WRITE = """
  // producer: one tensor copy (3-D box over all 256 bytes), completion on mbar0
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r4+1032], 256;
  add.u32 %r8, %r4, 1032;
  mov.u32 %r11, 0;
  @%p2 cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd20, {%r11, %r11, %r11}], [%r8];
  bar.warp.sync -1;
"""

# the producer waits for the hand-back, then a second tensor copy overwrites buf (WAR)
PRODUCER_WAR_TENSOR = """
PB:
  ld.acquire.cta.shared.b64 %rd7, [%r4+1048];
  setp.eq.u64 %p5, %rd7, 0;
  @%p5 bra PB;
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r4+1032], 256;
  @%p2 cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd20, {%r11, %r11, %r11}], [%r8];
PW1:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r4+1032], 1;
  @!%p4 bra PW1;
  bra.uni DONE;
"""

# consumer of tensor_store: a tensor store of buf to out, then the hand-back
CONSUMER_TENSOR_STORE = """
  setp.eq.u32 %p2, %r3, 0;
  mov.u32 %r11, 0;
  @%p2 cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%rd21, {%r11, %r11, %r11}], [%r4];
  @%p2 cp.async.bulk.commit_group;
  @%p2 cp.async.bulk.wait_group 0;
  bar.warp.sync -1;
  @%p2 atom.release.cta.shared.xor.b64 %rd11, [%r4+1048], 1;
  bra.uni DONE;
"""

PRODUCER_WAR = """
PB:
  ld.acquire.cta.shared.b64 %rd7, [%r4+1048];
  setp.eq.u64 %p5, %rd7, 0;
  @%p5 bra PB;
  st.shared.u32 [%r6], %r3;
  bra.uni DONE;
"""

CONSUMER_HEAD = """
CONSUMER:
  setp.ne.u32 %p6, %r2, 1;
  @%p6 bra DONE;
"""

WAIT_FLAG = """
CW:
  ld.acquire.cta.shared.b64 %rd8, [%r4+1024];
  setp.eq.u64 %p7, %rd8, 0;
  @%p7 bra CW;
"""

WAIT_MBAR1 = """
CW:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p7, [%r4+1040], 0;
  @!%p7 bra CW;
"""

WAIT_MBAR0 = """
CW:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p7, [%r4+1032], 0;
  @!%p7 bra CW;
"""

CONSUMER_TAIL = """
  ld.shared.u32 %r9, [%r6];
  ld.shared.u32 %r10, [%r6+128];
  mul.wide.u32 %rd9, %r5, 1;
  add.u64 %rd10, %rd2, %rd9;
  st.global.u32 [%rd10], %r9;
  st.global.u32 [%rd10+128], %r10;
  bar.warp.sync -1;
  @%p2 atom.release.cta.shared.xor.b64 %rd11, [%r4+1048], 1;
DONE:
  ret;
}
"""

KERNELS = {
    "tensor_flag_hop": TENSOR_WRITE + WAIT_MBAR0_PRODUCER + SIGNAL_FLAG + PRODUCER_WAR_TENSOR + CONSUMER_HEAD
    + WAIT_FLAG,
    "tensor_store": GEN_WRITE + SIGNAL_FLAG + PRODUCER_WAR + CONSUMER_HEAD + WAIT_FLAG + CONSUMER_TENSOR_STORE,
    "flag_bits": GEN_WRITE + SIGNAL_FLAG + PRODUCER_WAR + CONSUMER_HEAD + WAIT_FLAG,
    "mbar_thread": GEN_WRITE + SIGNAL_MBAR1 + PRODUCER_WAR + CONSUMER_HEAD + WAIT_MBAR1,
    "bulk_direct": BULK_WRITE + PRODUCER_WAR + CONSUMER_HEAD + WAIT_MBAR0,
    "bulk_mbar_hop": BULK_WRITE + WAIT_MBAR0_PRODUCER + SIGNAL_MBAR1 + PRODUCER_WAR + CONSUMER_HEAD + WAIT_MBAR1,
    "bulk_flag_hop": BULK_WRITE + WAIT_MBAR0_PRODUCER + SIGNAL_FLAG + PRODUCER_WAR + CONSUMER_HEAD + WAIT_FLAG,
}


def main() -> int:
    from cuda.bindings import driver as drv

    def ok(res):
        err = res[0]
        if int(err) != 0:
            raise RuntimeError(f"CUDA error {err}")
        return res[1] if len(res) == 2 else res[1:]

    ok(drv.cuInit(0))
    dev = ok(drv.cuDeviceGet(0))
    ctx = ok(drv.cuDevicePrimaryCtxRetain(dev))
    ok(drv.cuCtxSetCurrent(ctx))
    text = HEADER + "".join(PROLOGUE.format(name=n) + body + CONSUMER_TAIL for n, body in KERNELS.items())
    mod = ok(drv.cuModuleLoadData(text.encode() + b"\0"))
    src_h = np.random.default_rng().integers(1, 2**31, 64, dtype=np.uint32)
    src = ok(drv.cuMemAlloc(256))
    out = ok(drv.cuMemAlloc(256))
    ok(drv.cuMemcpyHtoD(src, src_h.ctypes.data, 256))
    maps = ok(drv.cuMemAlloc(256))

    def tensor_map(ptr, at):
        """A 3-D map (8 x 2 x 4 u32 words, the whole 256 bytes as one box) at ``maps + at``."""
        tm = ok(drv.cuTensorMapEncodeTiled(
            drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, int(ptr),
            [drv.cuuint64_t(v) for v in (8, 2, 4)], [drv.cuuint64_t(v) for v in (32, 64)],
            [drv.cuuint32_t(v) for v in (8, 2, 4)], [drv.cuuint32_t(1)] * 3,
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
            drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
            drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
        raw = np.array(tm.opaque, dtype=np.uint64)
        ok(drv.cuMemcpyHtoD(int(maps) + at, raw.ctypes.data, raw.nbytes))
        return int(maps) + at

    tsrc, tout = tensor_map(src, 0), tensor_map(out, 128)
    bad = 0
    for name in KERNELS:
        fn = ok(drv.cuModuleGetFunction(mod, name.encode()))
        ok(drv.cuMemsetD8(out, 0, 256))
        args = ((int(src), int(out), tsrc, tout), (ctypes.c_void_p,) * 4)
        ok(drv.cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, 0, args, 0))
        ok(drv.cuCtxSynchronize())
        got = np.zeros(64, np.uint32)
        ok(drv.cuMemcpyDtoH(got.ctypes.data, out, 256))
        good = bool((got == src_h).all())
        bad += not good
        print(f"{name}: bytes {'ok' if good else 'WRONG'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
