// RUN: vdir-opt %s --split-input-file -p 'vdir-place{num-sms=2}' | filecheck %s
// RUN: vdir-opt %s --split-input-file -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s --split-input-file -p 'vdir-place{num-sms=2 side-loads=none}' | filecheck %s --check-prefix=NONE

// On an SM none of whose loads wait (a gemv's), the load engine would have
// nothing to issue, so vdir-place leaves the small loads that wait on
// nothing there: a tile of at most an eighth of the SM's largest free load
// (queues.SMALL_LOAD_FRACTION). The x row is then issued beside the weight
// tile, not behind it on the stream engine.

// side-loads=none: every load that waits on nothing streams (the rule
// before it).
// NONE-LABEL: vdir.program @side
// NONE:       %xt = vdir.load %x[0, 0] on stream
// NONE-LABEL: vdir.program @eighth
// NONE:       %xt = vdir.load %x[0, 0] on stream

// @side: x (4 KB) is a sixteenth of each SM's weight tile (16 rows of 2048,
// 64 KB): it stays on the load engine, the tile goes to the stream engine.
// CHECK-LABEL: vdir.program @side
// CHECK:       %xt = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0>}
// CHECK-NEXT:  %wt = vdir.load %w[0, 0] on stream {vdir.sched = #vdir.sched<id = 1, sm = 0, label = "%wt[i=0]">}
// CHECK:       %xt_1 = vdir.load %x[0, 0] on load {vdir.sched = #vdir.sched<id = 4, seq = 0, sm = 1>}
// CHECK-NEXT:  %wt_1 = vdir.load %w[16, 0] on stream {vdir.sched = #vdir.sched<id = 5, seq = 4, sm = 1, label = "%wt[i=1]">}
vdir.program @side(%w: !vdir.buffer<32x2048xbf16>, %x: !vdir.buffer<1x2048xbf16>, %y: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  vdir.repeat %i = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<32x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x32xbf16>
  }
}

// Each SM's queues: x alone on the load engine, the weight tile on the
// stream engine; the gemv waits on both loads' bits.
// ISA:      sm 0 load:
// ISA-NEXT:   0: load  @x+0 [1 x 4096B, stride 4096] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) signal(b[[X:[0-9]+]])  // %xt
// ISA-NEXT: sm 0 compute:
// ISA-NEXT:   0: gemv({{.*}} wait(b[[X]]=1, b[[W:[0-9]+]]=1)
// ISA:      sm 0 stream:
// ISA-NEXT:   0: load  @w+0 [16 x 4096B, stride 4096] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) signal(b[[W]])  // %wt

// -----

// @eighth: x (4 KB) is exactly an eighth of each SM's 8-row tile (32 KB), as
// a gemv's x chunk beside an 8-row tile of the same K chunk: it stays too.
// CHECK-LABEL: vdir.program @eighth
// CHECK:       %xt = vdir.load %x[0, 0] on load
// CHECK-NEXT:  %wt = vdir.load %w[0, 0] on stream
vdir.program @eighth(%w: !vdir.buffer<16x2048xbf16>, %x: !vdir.buffer<1x2048xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  vdir.repeat %i = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<16x2048xbf16> -> !vdir.tile<8x2048xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x8xbf16>
    %t = vdir.store %yt, %y[0, %r] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x16xbf16>
  }
}

// -----

// @alike: two free loads of one size, neither small beside the other: both
// go to the stream engine, as on an SM whose loads wait (place-stream.mlir).
// CHECK-LABEL: vdir.program @alike
// CHECK:       %at = vdir.load %a[0, 0] on stream
// CHECK-NEXT:  %bt = vdir.load %b[0, 0] on stream
// CHECK-NOT:   on load
// ISA:         // @alike
// ISA-NOT:     load:
// ISA:         sm 0 stream:
// ISA-NEXT:      0: load  @a+0
// ISA-NEXT:      1: load  @b+0
vdir.program @alike(%a: !vdir.buffer<1x1024xbf16>, %b: !vdir.buffer<1x1024xbf16>, %c: !vdir.buffer<1x1024xbf16>) {
  %at = vdir.load %a[0, 0] : !vdir.buffer<1x1024xbf16> -> !vdir.tile<1x1024xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x1024xbf16> -> !vdir.tile<1x1024xbf16>
  %ct = vdir.compute add(%at, %bt) : (!vdir.tile<1x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x1024xbf16>
  %s = vdir.store %ct, %c[0, 0] : !vdir.tile<1x1024xbf16>, !vdir.buffer<1x1024xbf16>
}

// -----

// @waits: the SM also reads back the result it stored (a load that waits),
// so x streams beside the tile, before that load in program order or after
// it (%z).
// CHECK-LABEL: vdir.program @waits
// CHECK:       %xt = vdir.load %x[0, 0] on stream
// CHECK:       %back = vdir.load %y[0, 0] on load
// CHECK:       %zt = vdir.load %z[0, 0] on stream
vdir.program @waits(%w: !vdir.buffer<16x2048xbf16>, %x: !vdir.buffer<1x2048xbf16>, %y: !vdir.buffer<1x16xbf16>, %z: !vdir.buffer<1x16xbf16>, %out: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x2048xbf16> -> !vdir.tile<16x2048xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
  %t = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
  %back = vdir.load %y[0, 0] after %t : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  %zt = vdir.load %z[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  %s = vdir.compute add(%back, %yt) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %s2 = vdir.compute add(%s, %zt) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %u = vdir.store %s2, %out[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
