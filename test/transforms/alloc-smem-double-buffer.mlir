// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' | filecheck %s

// Small tiles get spare slots too (a small class is double-buffered before
// the streaming classes take theirs, and the results share the 128-byte
// class with x, which loads fill), so a compute can write its next result
// while the store engine still reads the last one: the results rotate
// through the class's free slots, and a result reuses the first one's slot
// only after the store that read it (an after group of its vdir.sched).

// CHECK: %yt = vdir.compute gemv({{.*}}smem = [[A:[0-9]+]], label = "%yt[i=0]">}
// CHECK: vdir.store %yt, %y[0, 0] on store {vdir.sched = #vdir.sched<id = [[S0:[0-9]+]],
// CHECK-NOT: smem = [[A]], label = "%yt[i={{[1-6]}}]"
// CHECK: %yt_7 = vdir.compute gemv({{.*}}smem = [[A]], label = "%yt[i=7]", after = {{\[\[}}[[S0]]]]>}
vdir.program @results(%w: !vdir.buffer<192x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x192xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 12 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<192x64xbf16> -> !vdir.tile<16x64xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x192xbf16>
  }
}
