// RUN: %roundtrip

// The scheduled form: the program's stage and layout, and every micro-op's
// schedule facts, round-trip through the custom and the generic form. A
// laid-out program has all of them; facts a micro-op lacks are omitted.

// CHECK:      vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 2, smem_bytes = 1024, counter_counts = [2], buffer_roles = [in, inout]>} {
// CHECK-NEXT:   %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>}
// CHECK-NEXT:   %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>}
// CHECK-NEXT:   %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1], release = [0]>}
// CHECK-NEXT:   %t2 = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 3, seq = 0, sm = 1, pos = 0, smem = 0>}
// CHECK-NEXT:   %1 = vdir.store %t2, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 4, seq = 2, sm = 1, pos = 0, release = [0]>}
// CHECK-NEXT:   %v = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = 5, sm = 1, pos = 1, smem = 128, wait_counters = [0 : 2], after = {{\[\[}}2, 4]]>}
// CHECK-NEXT:   %w = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 6, seq = 5, hoist = -1, sm = 1, pos = 2, smem = 256>}
vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) attributes {vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<buffer_roles = [in, inout], counter_counts = [2], smem_bytes = 1024, num_sms = 2>} {
  %t = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = 0, signal = [0]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %u = vdir.compute add(%t, %t) on compute {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 0, smem = 128, wait = [0 : 1], signal = [1]>} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %0 = vdir.store %u, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 2, sm = 0, pos = 0, wait = [1 : 1], release = [0]>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %t2 = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 3, seq = 0, sm = 1, pos = 0, smem = 0>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %1 = vdir.store %t2, %y[0, 0] on store {vdir.sched = #vdir.sched<release = [0], id = 4, seq = 2, sm = 1, pos = 0>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %v = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = 5, sm = 1, pos = 1, smem = 128, wait_counters = [0 : 2], after = [[2, 4]]>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %w = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 6, seq = 5, hoist = -1, sm = 1, pos = 2, smem = 256>} : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %2 = vdir.store %v, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 7, sm = 1, pos = 1>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %3 = vdir.store %w, %y[0, 0] on store {vdir.sched = #vdir.sched<id = 8, sm = 1, pos = 2>} : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
