// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 flag-words=4096}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-flag-words,vdir-layout-deps,vdir-encode' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=PLAIN
// RUN: vdir-opt %s | filecheck %s --check-prefix=ROUND

// flag-words.mlir's hand-off with @mid declared scratch: the caller never sees
// it, and its one reader polls flag words, so nothing reads @mid's own bytes.
// Each store then writes only its words, in one record that keeps the
// store's waits (and would keep its signals and releases): no plain store
// into @mid follows, and no bulk copy of it holds the store queue.

// CHECK:        // buffer 1: mid 1x256 bf16 (scratch)
// CHECK:        sm 0 load:
// CHECK-NEXT:     0: load  words(@mid) sync+2048 [1 x 512B, stride 512] -> smem[{{[0-9]+}}] signal(b{{[0-9]+}})  // %mt
// CHECK:        sm 0 store:
// CHECK-NEXT:     0: store smem[{{[0-9]+}}] -> words(@mid) sync+2048 [1 x 256B, stride 512] wait(b{{[0-9]+}}=1)  // store to @mid[i=0]
// CHECK-NEXT:     1: store smem[{{[0-9]+}}] -> @y+0
// CHECK:        sm 1 store:
// CHECK-NEXT:     0: store smem[{{[0-9]+}}] -> words(@mid) sync+2560 [1 x 256B, stride 512] wait(b{{[0-9]+}}=1)  // store to @mid[i=1]
// CHECK-NOT:    -> @mid

// Without flag words a scratch buffer is written and read as any other; it is
// still not an output.
// PLAIN:        // buffer 1: mid 1x256 bf16 (scratch)
// PLAIN:        load  @mid+0 [1 x 512B, stride 512] {{.*}}wait(c0>=2*epoch)
// PLAIN:        store smem[{{[0-9]+}}] -> @mid+0

// The keyword round-trips.
// ROUND:        vdir.program @handoff(%x: !vdir.buffer<1x256xbf16>, %mid: !vdir.buffer<1x256xbf16> scratch, %y: !vdir.buffer<1x256xbf16>)

vdir.program @handoff(%x: !vdir.buffer<1x256xbf16>, %mid: !vdir.buffer<1x256xbf16> scratch, %y: !vdir.buffer<1x256xbf16>) {
  vdir.repeat %i = 0 to 2 {
    %c = affine.apply affine_map<(d0) -> (d0 * 128)> (%i)
    %xt = vdir.load %x[0, %c] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x128xbf16>
    %s = vdir.compute add(%xt, %xt) : (!vdir.tile<1x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x128xbf16>
    %t = vdir.store %s, %mid[0, %c] : !vdir.tile<1x128xbf16>, !vdir.buffer<1x256xbf16>
  }
  %mt = vdir.load %mid[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  %u = vdir.compute add(%mt, %mt) : (!vdir.tile<1x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x256xbf16>
  %w = vdir.store %u, %y[0, 0] : !vdir.tile<1x256xbf16>, !vdir.buffer<1x256xbf16>
}
