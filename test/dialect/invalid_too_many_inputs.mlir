// RUN: vdir-opt %s --print-diagnostics | filecheck %s

// One compute instruction has slots for four input tiles (isa.MAX_INPUTS);
// the verifier rejects a compute with more before any family check.

vdir.program @five_inputs(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: a compute takes at most 4 input tiles (the slots of one instruction), got 5
  %u = vdir.compute add(%t, %t, %t, %t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
