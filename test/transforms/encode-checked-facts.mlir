// RUN: not vdir-opt %s -p vdir-encode 2>&1 | filecheck %s

// vdir-encode trusts the facts of the laid-out form only after the program
// verifier checked them: a load on an SM the program does not have is a
// located error (it used to be left out of the encoded program silently).

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = 1024, buffer_roles = [in, out]>} {
  // CHECK: encode-checked-facts.mlir:[[# @LINE + 1]]:3: error: sm = 5 is out of range: the program is placed on 1 SM
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 5, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
// CHECK-NOT: error
