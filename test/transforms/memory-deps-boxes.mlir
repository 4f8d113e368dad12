// RUN: vdir-opt %s -p 'vdir-place{num-sms=1}' | filecheck %s

// Memory dependencies compare regions as boxes of rows x columns, not as the
// flat byte range from a region's first byte to its last. Two heads append
// their rows side by side to a cache at a launch-time row (each store may
// reach every row, but only its own 64 columns): neither append waits for
// the other, and each head's block load waits only for its own append.
// A load that spans both heads' columns waits for both.

vdir.program @append_side_by_side(%k: !vdir.buffer<2x64xbf16>, %cache: !vdir.buffer<32x128xbf16>, %out: !vdir.buffer<32x128xbf16>, %pos: index in 0 to 32) {
  %k0 = vdir.load %k[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %k1 = vdir.load %k[1, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %a0 = vdir.store %k0, %cache[%pos, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<32x128xbf16>
  %a1 = vdir.store %k1, %cache[%pos, 64] : !vdir.tile<1x64xbf16>, !vdir.buffer<32x128xbf16>
  %b0 = vdir.load %cache[0, 0] : !vdir.buffer<32x128xbf16> -> !vdir.tile<32x64xbf16>
  %b1 = vdir.load %cache[0, 64] : !vdir.buffer<32x128xbf16> -> !vdir.tile<32x64xbf16>
  %all = vdir.load %cache[0, 0] : !vdir.buffer<32x128xbf16> -> !vdir.tile<32x128xbf16>
  %s0 = vdir.store %b0, %out[0, 0] : !vdir.tile<32x64xbf16>, !vdir.buffer<32x128xbf16>
  %s1 = vdir.store %b1, %out[0, 64] : !vdir.tile<32x64xbf16>, !vdir.buffer<32x128xbf16>
  %s2 = vdir.store %all, %out[0, 0] : !vdir.tile<32x128xbf16>, !vdir.buffer<32x128xbf16>
}

// CHECK:     vdir.store %k0, %cache[%pos, 0] on store {vdir.sched = #vdir.sched<id = [[A0:[0-9]+]], sm = 0>}
// CHECK:     vdir.store %k1, %cache[%pos, 64] on store {vdir.sched = #vdir.sched<id = [[A1:[0-9]+]], sm = 0>}
// CHECK:     %b0 = vdir.load %cache[0, 0] on load {{{.*}}after = {{\[\[}}[[A0]]]]>}
// CHECK:     %b1 = vdir.load %cache[0, 64] on load {{{.*}}after = {{\[\[}}[[A1]]]]>}
// CHECK:     %all = vdir.load %cache[0, 0] on load {{{.*}}after = {{\[\[}}[[A0]], [[A1]]]]>}
// CHECK:     vdir.store %b0, %out[0, 0] on store {vdir.sched = #vdir.sched<id = [[S0:[0-9]+]], sm = 0>}
// CHECK:     vdir.store %b1, %out[0, 64] on store {vdir.sched = #vdir.sched<id = [[S1:[0-9]+]], sm = 0>}
// CHECK:     vdir.store %all, %out[0, 0] on store {{{.*}}after = {{\[\[}}[[S0]], [[S1]]]]>}
