// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' | filecheck %s

// Six 64 KiB weight tiles stream through one SM. The budget (227 KiB less
// the kernel's 4 KiB) holds three 64 KiB slots next to the small tiles, so
// the weight tiles rotate through offsets 0, 65536, 131072 and the fourth
// tile reuses the slot the first one left, waiting for the first gemv (its
// only reader) through an after group of its vdir.sched.

// CHECK-LABEL: vdir.program @stream
// CHECK-SAME:    vdir.layout = #vdir.layout<num_sms = 1, smem_bytes = {{[0-9]+}},
// CHECK:       vdir.load %w[0, 0] {{.*}}smem = 0, label = "%wt[i=0]">}
// CHECK:       vdir.compute gemv({{.*}}{vdir.sched = #vdir.sched<id = [[G0:[0-9]+]],
// CHECK:       vdir.load %w[16, 0] {{.*}}smem = 65536, label = "%wt[i=1]">}
// CHECK:       vdir.compute gemv({{.*}}{vdir.sched = #vdir.sched<id = [[G1:[0-9]+]],
// CHECK:       vdir.load %w[32, 0] {{.*}}smem = 131072, label = "%wt[i=2]">}
// CHECK:       vdir.load %w[48, 0] {{.*}}smem = 0, label = "%wt[i=3]", after = {{\[\[}}[[G0]]]]>}
// CHECK:       vdir.load %w[64, 0] {{.*}}smem = 65536, label = "%wt[i=4]", after = {{\[\[}}[[G1]]]]>}
vdir.program @stream(%w: !vdir.buffer<96x2048xbf16>, %x: !vdir.buffer<1x2048xbf16>, %y: !vdir.buffer<1x96xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  vdir.repeat %i = 0 to 6 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<96x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x96xbf16>
  }
}
