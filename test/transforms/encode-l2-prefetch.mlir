// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false prefetch=0 l2-prefetch=16384}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false prefetch=0 l2-prefetch=16384 stream-loads=false}' -t isa | filecheck %s --check-prefix=ONEQUEUE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false prefetch=0}' -t isa | filecheck %s --check-prefix=OFF
// RUN: not vdir-opt %s -p 'vdir-pipeline{l2-prefetch=-1}' 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not vdir-opt %s -p 'vdir-encode{l2-prefetch=-4096}' 2>&1 | filecheck %s --check-prefix=NEG-ENCODE

// Each SM's loads of @y wait on the other SM's store (a global counter).
// With l2-prefetch=16384 each of those waits asks L2 for the next 16 KB of
// weight tiles behind it that were not asked for yet: one 64 x 256 B tile
// of @v, named after the load it prefetches; the tile after the second
// wait gets its own prefetch there. The records add nothing else: the
// loads, their slots and their waits are those of the encoding without.
//
// The loads of @y wait, so they stay on the load engine; the weight tiles
// wait on nothing and are on the stream engine. The plan reads the SM's two
// load queues merged in queue order, as one queue would hold them, and puts
// each record just before the waiting load, in the load engine's queue: the
// stream queue gets none. With stream-loads=false (ONEQUEUE) all are in one
// queue and each record sits between the wait and the tile it asks for.

// CHECK:      sm 0 load:
// CHECK-NEXT:   0: prefetch.L2 @v+0 [64 x 256B, stride 256]  // %vt[i=0]
// CHECK-NEXT:   1: load  @y+0 [1 x 256B, stride 256] -> smem[{{[0-9]+}}] tmap{{[0-9]}}(0, 0) wait(c0>=2*epoch) signal(b{{[0-9]+}})  // %r[i=0]
// CHECK-NEXT:   2: prefetch.L2 @v+32768 [64 x 256B, stride 256]  // %vt[i=2]
// CHECK-NEXT:   3: load  @y+0 {{.*}} wait(c0>=2*epoch) {{.*}}// %r[i=2]
// CHECK-NEXT: sm 0 compute:
// CHECK:      sm 0 stream:
// CHECK-NOT:    prefetch.L2
// CHECK:        2: load  @v+0 [64 x 256B, stride 256] -> smem[{{[0-9]+}}] tmap{{[0-9]}}(0, 0) signal(b{{[0-9]+}})  // %vt[i=0]
// CHECK-NEXT:   3: load  @v+32768 [64 x 256B, stride 256] -> smem[{{[0-9]+}}] tmap{{[0-9]}}(128, 0) signal(b{{[0-9]+}})  // %vt[i=2]
// CHECK-NEXT: sm 1 load:
// CHECK-NEXT:   0: prefetch.L2 @v+16384 [64 x 256B, stride 256]  // %vt[i=1]
// CHECK-NEXT:   1: load  @y+0 {{.*}} wait(c0>=2*epoch) {{.*}}// %r[i=1]
// CHECK-NEXT:   2: prefetch.L2 @v+49152 [64 x 256B, stride 256]  // %vt[i=3]
// CHECK-NEXT:   3: load  @y+0 {{.*}} wait(c0>=2*epoch) {{.*}}// %r[i=3]
// CHECK:      sm 1 stream:
// CHECK-NOT:    prefetch.L2

// ONEQUEUE:      sm 0 load:
// ONEQUEUE:        2: prefetch.L2 @v+0 [64 x 256B, stride 256]  // %vt[i=0]
// ONEQUEUE-NEXT:   3: load  @y+0 [1 x 256B, stride 256] -> smem[{{[0-9]+}}] tmap{{[0-9]}}(0, 0) wait(c0>=2*epoch)  // %r[i=0]
// ONEQUEUE-NEXT:   4: load  @v+0 [64 x 256B, stride 256]
// ONEQUEUE-NEXT:   5: prefetch.L2 @v+32768 [64 x 256B, stride 256]  // %vt[i=2]
// ONEQUEUE-NEXT:   6: load  @y+0 {{.*}} wait(c0>=2*epoch)  // %r[i=2]
// ONEQUEUE-NEXT:   7: load  @v+32768 [64 x 256B, stride 256]
// ONEQUEUE:      sm 1 load:
// ONEQUEUE:        2: prefetch.L2 @v+16384 [64 x 256B, stride 256]  // %vt[i=1]
// ONEQUEUE:        5: prefetch.L2 @v+49152 [64 x 256B, stride 256]  // %vt[i=3]
// ONEQUEUE-NOT:  stream:

// OFF-NOT: prefetch.L2

// NEG: error: vdir-pipeline: option 'l2-prefetch' must be at least 0, got -1
// NEG-ENCODE: error: vdir-encode: option 'l2-prefetch' must be at least 0, got -4096

vdir.program @prefetch_ahead(%w: !vdir.buffer<256x64xbf16>, %v: !vdir.buffer<256x128xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x128xbf16>, %out: !vdir.buffer<1x256xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wa = vdir.load %w[0, 0] : !vdir.buffer<256x64xbf16> -> !vdir.tile<64x64xbf16>
  %ya = vdir.compute gemv(%wa, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %sa = vdir.store %ya, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  %wb = vdir.load %w[64, 0] : !vdir.buffer<256x64xbf16> -> !vdir.tile<64x64xbf16>
  %yb = vdir.compute gemv(%wb, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %sb = vdir.store %yb, %y[0, 64] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x128xbf16>
  vdir.repeat %i = 0 to 4 {
    %row = affine.apply affine_map<(d0) -> (d0 * 64)> (%i)
    %r = vdir.load %y[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
    %vt = vdir.load %v[%row, 0] : !vdir.buffer<256x128xbf16> -> !vdir.tile<64x128xbf16>
    %o = vdir.compute gemv(%vt, %r) : (!vdir.tile<64x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x64xbf16>
    %so = vdir.store %o, %out[0, %row] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x256xbf16>
  }
}
