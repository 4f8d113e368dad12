// RUN: vdir-opt %s -p 'vdir-place{num-sms=1}' | filecheck %s --check-prefix=PLACED
// RUN: vdir-opt %s -p 'vdir-place{num-sms=1}' | vdir-opt -p 'vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode' -t isa | filecheck %s

// Passes chained through text keep the micro-ops' readable names: a copy of
// a vdir.repeat body carries its indices as the label of its #vdir.sched
// (its SSA name, %wt_1, does not say which copy it is), and the next
// vdir-opt names it by the label in diagnostics and listings.

vdir.program @rows(%w: !vdir.buffer<64x1024xbf16>, %x: !vdir.buffer<1x1024xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x1024xbf16> -> !vdir.tile<1x1024xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<16x1024xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}

// The loads wait on nothing: vdir-place puts the weight tiles on the stream
// engine and leaves the small %xt on the otherwise idle load engine.
// PLACED:      %xt = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>}
// PLACED-NEXT: %wt = vdir.load %w[0, 0] on stream {vdir.sched = #vdir.sched<id = 1, sm = 0, label = "%wt[i=0]">}
// PLACED:      %wt_1 = vdir.load %w[16, 0] on stream {vdir.sched = #vdir.sched<id = 4, sm = 0, label = "%wt[i=1]">}
// PLACED:      vdir.store %yt_3, %y[0, 48] on store {vdir.sched = #vdir.sched<id = 12, sm = 0, label = "store to @y[i=3]">}

// CHECK: sm 0 load:
// CHECK: // %xt (
// CHECK: sm 0 compute:
// CHECK: // %yt[i=0] (
// CHECK: sm 0 store:
// CHECK: // store to @y[i=3] (
// CHECK: sm 0 stream:
// CHECK: // %wt[i=0] (
// CHECK: // %wt[i=3] (
