// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem' | filecheck %s --check-prefix=BEFORE
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-hold-streams' | filecheck %s --check-prefix=AFTER
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-hold-streams{phases=2}' | filecheck %s --check-prefix=BEFORE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 hold-streams=1}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=PLAIN
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 hold-streams=1 release-first=true}' -t isa | filecheck %s --check-prefix=FIRST
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-hold-streams,vdir-layout-deps,vdir-encode{release-first=true}' -t isa | filecheck %s --check-prefix=FIRST
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 target=h100}' -t isa | filecheck %s --check-prefix=FIRST
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 target=h100 hold-streams=0 release-first=false}' -t isa | filecheck %s --check-prefix=PLAIN

// Each SM multiplies four 64 KiB tiles of @w and stores its rows of @mid,
// which both SMs load back for a second gemv over 64 KiB tiles of @u. A
// store that releases a counter ends with a gpu-scope fence that waits for
// the SM's bulk copies in flight; the stream engine would issue the @u tile
// that reuses the last @w tile's slot as soon as that tile's gemv frees it,
// so during the store. vdir-hold-streams makes that tile wait for the store
// too (one more dependency group), where its readers are at least `phases`
// phases after the store (here one: the second gemv reads @mid back). The
// stores before the last in SM 0's queue release nothing (the last one's
// release covers them), so they hold nothing.

// SM 0's last @w gemv (id 11) and its releasing store (id 12); the @u tile
// in the gemv's slot waits for the gemv, and with the pass for the store.
// BEFORE:     %ut_2 = vdir.load %u[64, 0] on stream {vdir.sched = #vdir.sched<id = 20, {{.*}}smem = 0, label = "%ut[j=4]", after = {{\[\[}}11{{\]\]}}>}
// AFTER:      %p_3 = vdir.compute gemv(%wt_3, %xt) on compute {vdir.sched = #vdir.sched<id = 11,
// AFTER-NEXT: vdir.store %p_3, %mid[0, 1536] on store {vdir.sched = #vdir.sched<id = 12,
// AFTER:      %ut_2 = vdir.load %u[64, 0] on stream {vdir.sched = #vdir.sched<id = 20, {{.*}}smem = 0, label = "%ut[j=4]", after = {{\[\[}}11], [12{{\]\]}}>}
// The other @u tiles wait for their slots' gemvs only.
// AFTER-NOT:  after = {{\[\[}}{{[0-9]+}}], [{{[0-9]+}}{{\]\]}}>} : !vdir.buffer<128x2048xbf16>
// AFTER:      %ut_6 = vdir.load %u[80, 0] on stream {vdir.sched = #vdir.sched<id = 46, {{.*}}after = {{\[\[}}37], [38{{\]\]}}>}

// Laid out, the held tile waits on the bit the releasing store toggles.
// ISA:        sm 0 store:
// ISA:          3: store {{.*}} signal(b[[B:[0-9]+]]) release(c0)  // store to @mid[i=6]
// ISA:        sm 0 stream:
// ISA:          7: load  @u+262144 {{.*}} wait(b[[B]]={{[01]}}) {{.*}}// %ut[j=4]
// With release-first, the store that the held tile waits for releases its
// counter before it toggles that bit: the tile issues after the release's
// fence. The stores before it release nothing and keep their order. Left to
// the target (no hold-streams, no release-first given), the pipeline takes
// the H100's: one phase of holds, release first; the H200's (this
// program's own target): none.
// FIRST:      sm 0 store:
// FIRST:        1: store {{.*}} wait(b3=1) signal(b2)  // store to @mid[i=2]
// FIRST:        3: store {{.*}} wait(b0=1) release(c0) signal(b[[B:[0-9]+]])  // store to @mid[i=6]
// FIRST:      sm 0 stream:
// FIRST:        7: load  @u+262144 {{.*}} wait(b[[B]]={{[01]}}) {{.*}}// %ut[j=4]
// PLAIN:      sm 0 compute:
// PLAIN:        3: gemv({{.*}} signal(b[[G:[0-9]+]])  // %p[i=6]
// PLAIN:      sm 0 stream:
// PLAIN:        7: load  @u+262144 {{.*}} wait(b[[G]]=1) {{.*}}// %ut[j=4]

vdir.program @hold(%x: !vdir.buffer<1x128xbf16>, %w: !vdir.buffer<2048x128xbf16>, %mid: !vdir.buffer<1x2048xbf16>,
                   %u: !vdir.buffer<128x2048xbf16>, %y: !vdir.buffer<1x128xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  vdir.repeat %i = 0 to 8 {
    %r = affine.apply affine_map<(d0) -> (d0 * 256)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<2048x128xbf16> -> !vdir.tile<256x128xbf16>
    %p = vdir.compute gemv(%wt, %xt) : (!vdir.tile<256x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x256xbf16>
    %s = vdir.store %p, %mid[0, %r] : !vdir.tile<1x256xbf16>, !vdir.buffer<1x2048xbf16>
  }
  %m = vdir.load %mid[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  vdir.repeat %j = 0 to 8 {
    %c = affine.apply affine_map<(d0) -> (d0 * 16)> (%j)
    %ut = vdir.load %u[%c, 0] : !vdir.buffer<128x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %q = vdir.compute gemv(%ut, %m) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %qs = vdir.store %q, %y[0, %c] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x128xbf16>
  }
}
