// RUN: vdir-opt %s -p 'vdir-place{num-sms=3}' | filecheck %s

// Clusters go to the least-loaded SM by the cost model: the big 64x256 tile
// takes SM 0, the next two (small) tiles fill SMs 1 and 2, and the fourth
// lands on SM 1, the least loaded after them, not back on SM 0.

// CHECK-LABEL: vdir.program @uneven
// CHECK-DAG:   vdir.load %w[0, 0] {{.*}}sm = 0{{[,>]}}{{.*}} -> !vdir.tile<64x256xbf16>
// CHECK-DAG:   vdir.load %w[64, 0] {{.*}}sm = 1{{[,>]}}{{.*}} -> !vdir.tile<16x256xbf16>
// CHECK-DAG:   vdir.load %w[80, 0] {{.*}}sm = 2{{[,>]}}{{.*}} -> !vdir.tile<16x256xbf16>
// CHECK-DAG:   vdir.load %w[96, 0] {{.*}}sm = 1{{[,>]}}{{.*}} -> !vdir.tile<16x256xbf16>
vdir.program @uneven(%w: !vdir.buffer<112x256xbf16>, %x: !vdir.buffer<1x256xbf16>, %y: !vdir.buffer<1x112xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  %w0 = vdir.load %w[0, 0] : !vdir.buffer<112x256xbf16> -> !vdir.tile<64x256xbf16>
  %y0 = vdir.compute gemv(%w0, %xt) : (!vdir.tile<64x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x64xbf16>
  %t0 = vdir.store %y0, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x112xbf16>
  vdir.repeat %i = 0 to 3 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16 + 64)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<112x256xbf16> -> !vdir.tile<16x256xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x16xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x112xbf16>
  }
}
