// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s

// Twelve tiles stream through one SM through three shared-memory slots.
// Only a few edges are unresolved at once, so eight bits serve the whole
// program: a reused bit keeps toggling, and its waiters alternate between
// parity 1 and parity 0. The x vector's load, small beside the weight tiles,
// runs on the otherwise idle load engine (vdir-place) and takes bit 0, which
// the first store reuses once the first gemv has waited on it; the weight
// tiles stream through the stream engine. A gemv waits for its weight tile
// and, from the third on, for the store that frees its output slot.

// CHECK-LABEL: vdir.program @stream
// CHECK:       %xt = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = {{[0-9]+}}, signal = [0]>}
// CHECK:       vdir.compute gemv({{.*}}wait = [0 : 1, 1 : 1], signal = [2]>}
// CHECK:       vdir.store {{.*}}wait = [2 : 1], signal = [0]>}
// CHECK:       vdir.load %w[48, 0] {{.*}}wait = [2 : 1], signal = [6]{{[,>]}}
// CHECK:       vdir.load %w[96, 0] {{.*}}wait = [2 : 0], signal = [6]{{[,>]}}
// CHECK:       vdir.compute gemv({{.*}}wait = [0 : 0, 6 : 0]
// CHECK-NOT:   signal = [{{[89]|[1-9][0-9]}}]
vdir.program @stream(%w: !vdir.buffer<192x2048xbf16>, %x: !vdir.buffer<1x2048xbf16>, %y: !vdir.buffer<1x192xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  vdir.repeat %i = 0 to 12 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<192x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x192xbf16>
  }
}
