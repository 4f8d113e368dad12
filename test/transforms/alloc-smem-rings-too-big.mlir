// RUN: not vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' 2>&1 | filecheck %s

// Each phase fits on its own (three 64 KiB tiles live together, then three
// 32 KiB tiles), but each size class keeps a ring of its peak for the whole
// program, and the two rings together (288 KiB) exceed the 223 KiB of tile
// arena: an error, not an arena larger than the SM has.

// CHECK: alloc-smem-rings-too-big.mlir:[[# @LINE + 2]]:3: error: vdir-alloc-smem: the shared-memory rings of SM 0 (3 x 65536 B, 3 x 32768 B) need 294912 bytes, more than the 228352 bytes available on h200; use smaller tiles
vdir.program @phases(%x: !vdir.buffer<64x1024xbf16>, %y: !vdir.buffer<32x1024xbf16>, %o: !vdir.buffer<48x1024xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<32x1024xbf16>
  %b = vdir.load %x[32, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<32x1024xbf16>
  %c = vdir.compute add(%a, %b) : (!vdir.tile<32x1024xbf16>, !vdir.tile<32x1024xbf16>) -> !vdir.tile<32x1024xbf16>
  %s = vdir.store %c, %o[0, 0] : !vdir.tile<32x1024xbf16>, !vdir.buffer<48x1024xbf16>
  %d = vdir.load %y[0, 0] : !vdir.buffer<32x1024xbf16> -> !vdir.tile<16x1024xbf16>
  %e = vdir.load %y[16, 0] : !vdir.buffer<32x1024xbf16> -> !vdir.tile<16x1024xbf16>
  %f = vdir.compute add(%d, %e) : (!vdir.tile<16x1024xbf16>, !vdir.tile<16x1024xbf16>) -> !vdir.tile<16x1024xbf16>
  %t = vdir.store %f, %o[32, 0] : !vdir.tile<16x1024xbf16>, !vdir.buffer<48x1024xbf16>
}
