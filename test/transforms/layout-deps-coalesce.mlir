// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s

// Four row tiles of %y, two per SM, each stored by its SM's store engine;
// the load of the whole %y waits for all four. A store engine completes each
// store before it begins the next, so only the later store of each SM
// releases the counter: it counts 2 releases per launch, not 4, and the
// earlier store of each SM releases nothing.

// CHECK-LABEL: vdir.program @coalesce
// CHECK-SAME:    counter_counts = [2],
// CHECK-DAG:   vdir.store %{{.*}}, %y[0, 0] on store {{.*}}sm = [[SMA:[01]]], pos = 0, label = "store to @y[i=0]", wait = [{{[0-9]+}} : {{[01]}}]>}
// CHECK-DAG:   vdir.store %{{.*}}, %y[0, 32] on store {{.*}}sm = [[SMA]], pos = 1, {{.*}}, release = [0]>}
// CHECK-DAG:   vdir.store %{{.*}}, %y[0, 16] on store {{.*}}sm = [[SMB:[01]]], pos = 0, label = "store to @y[i=1]", wait = [{{[0-9]+}} : {{[01]}}]>}
// CHECK-DAG:   vdir.store %{{.*}}, %y[0, 48] on store {{.*}}sm = [[SMB]], pos = 1, {{.*}}, release = [0]>}
// CHECK-DAG:   vdir.load %y[0, 0] {{.*}}wait_counters = [0 : 2]
vdir.program @coalesce(%w: !vdir.buffer<64x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>, %z: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<16x64xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
  %yv = vdir.load %y[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %yv, %z[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
