// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=ISA

// Explicit ordering: %last may only load once both stores are done, said
// with a token join even though the regions do not overlap. The stores land
// on different SMs, so the join becomes one global counter of count 2.

// CHECK: vdir.store %ta, %y[0, 0] on store {vdir.sched = #vdir.sched<id = [[S0:[0-9]+]],
// CHECK: %last = vdir.load %x[0, 0] on load {{{.*}}after = {{\[\[}}[[S0]], [[S1:[0-9]+]]]]>}
// CHECK: vdir.store %tb, %y[0, 64] on store {vdir.sched = #vdir.sched<id = [[S1]],

// ISA-DAG: store {{.*}} -> @y+0 {{.*}}release(c0)
// ISA-DAG: load  @x+0 {{.*}}wait(c0>=2*epoch)
// ISA-DAG: store {{.*}} -> @y+128 {{.*}}release(c0)
vdir.program @joined(%w: !vdir.buffer<128x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x128xbf16>, %z: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wa = vdir.load %w[0, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %ta = vdir.compute gemv(%wa, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s0 = vdir.store %ta, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  %wb = vdir.load %w[64, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %tb = vdir.compute gemv(%wb, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %tb, %y[0, 64] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  %both = vdir.join %s0, %s1
  %last = vdir.load %x[0, 0] after %both : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %done = vdir.store %last, %z[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
