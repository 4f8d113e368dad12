// RUN: not vdir-opt %s -p vdir-layout-deps 2>&1 | filecheck %s

// flag_words marks a load or a store (vdir-flag-words); on a compute it is a located error.
// CHECK: flag-words-errors.mlir:[[# @LINE + 3]]:3: error: vdir-layout-deps: compute %u: only a load or a store has flag_words
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<allocated>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, flag_words = 1>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
