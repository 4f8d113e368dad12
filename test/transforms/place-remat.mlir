// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s

// The activation vector %xt feeds gemvs on both SMs: placement gives each SM
// its own copy of the load instead of sending the tile through global memory.
// The weight tiles alternate between the SMs (equal cost, least-loaded SM).
// Every load waits on nothing, so the weight tiles go to the stream engine
// of their SM (the program's `on load` notwithstanding), and %xt's copies,
// small beside them, stay on the load engine, which has nothing else to do.

// CHECK-LABEL: vdir.program @gemv
// CHECK-SAME:    vdir.stage = #vdir.stage<placed>, vdir.layout = #vdir.layout<num_sms = 2, buffer_roles = [in, in, out]>
// CHECK:         %[[X0:.*]] = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0{{(, label = "[^"]*")?}}>}
// CHECK:         %[[W0:.*]] = vdir.load %w[0, 0] on stream {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:         vdir.compute gemv(%[[W0]], %[[X0]]) {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:         vdir.store {{.*}}, %y[0, 0] on store {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:         vdir.load %w[32, 0] {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:         %[[X1:.*]] = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 7, seq = 0, sm = 1{{(, label = "[^"]*")?}}>}
// CHECK:         %[[W1:.*]] = vdir.load %w[16, 0] {{.*}}sm = 1{{(, label = "[^"]*")?}}>
// CHECK:         vdir.compute gemv(%[[W1]], %[[X1]]) {{.*}}sm = 1{{(, label = "[^"]*")?}}>
// CHECK:         vdir.store {{.*}}, %y[0, 16] {{.*}}sm = 1{{(, label = "[^"]*")?}}>
// CHECK:         vdir.load %w[48, 0] {{.*}}sm = 1{{(, label = "[^"]*")?}}>
// CHECK-NOT:     sm = 2
vdir.program @gemv(%w: !vdir.buffer<64x256xbf16>, %x: !vdir.buffer<1x256xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] on load : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] on load : !vdir.buffer<64x256xbf16> -> !vdir.tile<16x256xbf16>
    %yt = vdir.compute gemv(%wt, %xt) on compute : (!vdir.tile<16x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x16xbf16>
    %tok = vdir.store %yt, %y[0, %r] on store : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}
