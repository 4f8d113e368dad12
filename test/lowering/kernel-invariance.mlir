// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx > %t.1sm.ptx
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false}' -t ptx > %t.2sm.ptx
// RUN: diff %t.1sm.ptx %t.2sm.ptx
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false}' -t isa | filecheck %s --check-prefix=ISA
// RUN: filecheck %s --input-file %t.2sm.ptx

// The kernel is specialised to the program only in its families: shapes,
// offsets, SM count, queues, bits and counters are all read from the
// instruction stream at run time. The same program placed on one SM or on
// two SMs joined by a global counter lowers to the same PTX text, and the
// counter wait / release are the ones every engine carries.

// ISA:      // @split: 2 SMs, {{[0-9]+}} bytes of tiles per SM, {{[1-9][0-9]*}} global counter(s)
// ISA:      sm 0 load:
// ISA:        load  @y+0 {{.*}} wait(c0>=2*epoch)
// ISA:      sm 0 store:
// ISA-NEXT:   0: store {{.*}} release(c0)
// ISA:      sm 1 store:
// ISA-NEXT:   0: store {{.*}} release(c0)

// CHECK:     .visible .entry vdir_persistent(
// CHECK:     $L_fam1_0:
// CHECK-NOT: $L_fam{{[2-9]}}_

vdir.program @split(%w: !vdir.buffer<64x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>, %z: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %w0 = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
  %w1 = vdir.load %w[32, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
  %y0 = vdir.compute gemv(%w0, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %y1 = vdir.compute gemv(%w1, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %s0 = vdir.store %y0, %y[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
  %s1 = vdir.store %y1, %y[0, 32] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
  // reads what both SMs stored: a cross-SM dependency through a counter
  %yt = vdir.load %y[0, 0] after %s0, %s1 : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %z0 = vdir.compute gemv(%w0, %yt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %s2 = vdir.store %z0, %z[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
}
