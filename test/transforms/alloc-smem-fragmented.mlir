// RUN: not vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' 2>&1 | filecheck %s

// Rings per size class would need 320 KiB, so the SM is allocated by
// liveness; there 64 + 32 + 64 + 32 KiB are placed side by side, the two
// 64 KiB tiles are stored and freed while the 32 KiB ones stay live, and
// the 96 KiB tile finds no free range wide enough (the largest gap is 64
// KiB) although the live bytes would fit: a located error.

// CHECK: alloc-smem-fragmented.mlir:[[# @LINE + 8]]:3: error: vdir-alloc-smem: %f on SM 0 finds no free 98304-byte range in the 227328 bytes of shared memory on h200 (the live tiles leave only smaller gaps); use smaller tiles
vdir.program @fragmented(%x: !vdir.buffer<32x1024xbf16>, %y: !vdir.buffer<16x1024xbf16>, %z: !vdir.buffer<48x1024xbf16>, %o: !vdir.buffer<128x1024xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<32x1024xbf16> -> !vdir.tile<32x1024xbf16>
  %b = vdir.load %y[0, 0] : !vdir.buffer<16x1024xbf16> -> !vdir.tile<16x1024xbf16>
  %c = vdir.load %x[0, 0] : !vdir.buffer<32x1024xbf16> -> !vdir.tile<32x1024xbf16>
  %d = vdir.load %y[0, 0] : !vdir.buffer<16x1024xbf16> -> !vdir.tile<16x1024xbf16>
  %sa = vdir.store %a, %o[0, 0] : !vdir.tile<32x1024xbf16>, !vdir.buffer<128x1024xbf16>
  %sc = vdir.store %c, %o[32, 0] : !vdir.tile<32x1024xbf16>, !vdir.buffer<128x1024xbf16>
  %f = vdir.load %z[0, 0] : !vdir.buffer<48x1024xbf16> -> !vdir.tile<48x1024xbf16>
  %sf = vdir.store %f, %o[64, 0] : !vdir.tile<48x1024xbf16>, !vdir.buffer<128x1024xbf16>
  %g = vdir.compute add(%b, %d) : (!vdir.tile<16x1024xbf16>, !vdir.tile<16x1024xbf16>) -> !vdir.tile<16x1024xbf16>
  %sg = vdir.store %g, %o[112, 0] : !vdir.tile<16x1024xbf16>, !vdir.buffer<128x1024xbf16>
}
