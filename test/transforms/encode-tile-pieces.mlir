// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 tile-pieces=true}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=WHOLE
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode{tile-pieces=true}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 tile-pieces=true}' -t ptx | filecheck %s --check-prefix=PTX
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t ptx | filecheck %s --check-prefix=PTX-WHOLE

// A gemv of four 16 x 1024 weight tiles (32 KiB each) over two SMs. With
// tile-pieces, each tile lands in two halves: the stream engine's load says
// so, its tensor map takes boxes of 8 rows (two per tile), and the gemv that
// reads it carries GEMV_WEIGHT_PIECES (4) in its third parameter word. The
// x tile, read by every gemv but not as its weights, lands whole.

vdir.program @gemv(%w: !vdir.buffer<64x1024xbf16>, %x: !vdir.buffer<1x1024xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] on load : !vdir.buffer<1x1024xbf16> -> !vdir.tile<1x1024xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> ((d0 * 16))> (%i)
    %wt = vdir.load %w[%r, 0] on load : !vdir.buffer<64x1024xbf16> -> !vdir.tile<16x1024xbf16>
    %yt = vdir.compute gemv(%wt, %xt) on compute : (!vdir.tile<16x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x16xbf16>
    %done = vdir.store %yt, %y[0, %r] on store : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}

// CHECK:      sm 0 load:
// CHECK-NEXT:   0: load  @x+0 [1 x 2048B, stride 2048] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) signal
// CHECK:      sm 0 compute:
// CHECK-NEXT:   0: gemv(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(16, 1024, 4)
// CHECK-NEXT:   1: gemv(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(16, 1024, 4)
// CHECK:      sm 0 stream:
// CHECK-NEXT:   0: load  @w+0 [16 x 2048B, stride 2048] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) x2 in 2 pieces signal
// CHECK-NEXT:   1: load  @w+65536 [16 x 2048B, stride 2048] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(32, 0) x2 in 2 pieces signal

// WHOLE-NOT:  in 2 pieces
// WHOLE:      sm 0 compute:
// WHOLE-NEXT:   0: gemv(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(16, 1024, 0)
// WHOLE:      sm 0 stream:
// WHOLE-NEXT:   0: load  @w+0 [16 x 2048B, stride 2048] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) signal

// The kernel of a program with tiles in pieces carries their paths: the
// stream engine arms a window's mbarrier, the gemv waits on it, and the
// engine waits for the last halves in flight before it leaves.
// PTX-DAG:    $L_ld_piece_window_free_0:
// PTX-DAG:    mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 1;
// PTX-DAG:    fence.proxy.async.shared::cta;
// PTX-DAG:    $L_gemv_half_wait_0:
// PTX-DAG:    mbarrier.try_wait.parity.shared::cta.b64 {{%p[0-9]+}}, [{{%r[0-9]+}}], 0;
// PTX-DAG:    $L_ld_piece_drain_0_0:
// PTX-WHOLE-NOT: piece
// PTX-WHOLE-NOT: gemv_half
