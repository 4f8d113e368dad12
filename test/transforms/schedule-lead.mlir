// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s --check-prefix=BEFORE
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s

// Each SM of this gemv has one weight tile (16 rows of 2048, 64 KB) and the x row,
// both on the stream engine, x first in program order. (Each SM also reads
// its results back after storing them: a load that waits, on the load
// engine, so x is not left there beside the tile, place-side-loads.mlir.) vdir-schedule issues
// the lone weight tile first: x lands long before it, and the gemv needs
// both. The tile takes x's place in program order (its seq, one place ahead).

// BEFORE:      %xt = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0>}
// BEFORE-NEXT: %wt = vdir.load %w[0, 0] on stream {vdir.sched = #vdir.sched<id = 1, sm = 0, label = "%wt[i=0]">}

// CHECK:       %xt = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 1>}
// CHECK-NEXT:  %wt = vdir.load %w[0, 0] on stream {vdir.sched = #vdir.sched<id = 1, seq = 0, hoist = -1, sm = 0, pos = 0, label = "%wt[i=0]">}
// CHECK:       %xt_1 = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = 6, seq = 0, sm = 1, pos = 1>}
// CHECK:       %wt_1 = vdir.load %w[16, 0] on stream {vdir.sched = #vdir.sched<id = 9, seq = 0, hoist = -1, sm = 1, pos = 0, label = "%wt[i=1]">}

vdir.program @lead(%w: !vdir.buffer<32x2048xbf16>, %x: !vdir.buffer<1x2048xbf16>, %y: !vdir.buffer<1x32xbf16>, %z: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  vdir.repeat %i = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<32x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x32xbf16>
    %back = vdir.load %y[0, %r] after %t : !vdir.buffer<1x32xbf16> -> !vdir.tile<1x16xbf16>
    %u = vdir.store %back, %z[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x32xbf16>
  }
}
