// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=3 fuse=false}' -t isa | filecheck %s

// %r waits for two groups on other SMs: the stores to @y it reads
// (read-after-write, derived) and the store to @z named by its token. An
// instruction waits on one counter, so the encoder puts a nop that waits on
// the second counter just before it on the same in-order engine.

// CHECK:      sm 2 load:
// CHECK:        [[N:[0-9]+]]: nop wait(c{{[0-9]}}>=1*epoch)  // %r
// CHECK-NEXT:   {{[0-9]+}}: load  @y+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap{{[0-9]+}}(0, 0) wait(c{{[0-9]}}>=1*epoch)
vdir.program @two_counters(%w: !vdir.buffer<128x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>, %z: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wa = vdir.load %w[0, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %ya = vdir.compute gemv(%wa, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s0 = vdir.store %ya, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %wb = vdir.load %w[64, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %yb = vdir.compute gemv(%wb, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %yb, %z[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %r = vdir.load %y[0, 0] after %s1 : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wc = vdir.load %w[0, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<64x64xbf16>
  %o = vdir.compute gemv(%wc, %r) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s2 = vdir.store %o, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
