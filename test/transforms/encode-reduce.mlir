// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false}' -t isa | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false}' | vdir-opt -t isa | filecheck %s

// A reducing store (`reduce add`) is a store whose word 31 (isa.REDUCE) is
// 1; the listing writes `reduce add` after its region. It reads its region
// as well as writing it: @y, never loaded, is an input too (inout: the
// caller passes the values to add to, zeros for a plain sum). It gets no
// tensor map (the kernel reduces with plain bulk copies), unlike the loads.
//
// The dependency analysis orders two reducing stores to one region like any
// two writes, in program order: the second SM's store waits for the first's
// release of a global counter. The encoded form survives the IR text
// (second RUN line).

// CHECK:      // @split_k: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 1 global counter(s)
// CHECK:      // buffer 2: y 1x32 f32 (inout)
// CHECK-NOT:  tensor map {{[0-9]+}}: y
// CHECK:      sm 0 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @y+0 [1 x 128B, stride 128] reduce add wait(b{{[0-9]+}}=1) release(c0)  // store to @y[s=0]
// CHECK:      sm 1 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @y+0 [1 x 128B, stride 128] reduce add wait(b{{[0-9]+}}=1) wait(c0>=1*epoch)  // store to @y[s=1]

vdir.program @split_k(%w: !vdir.buffer<32x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x32xf32>) {
  vdir.repeat %s = 0 to 2 {
    %k = affine.apply affine_map<(d0) -> (d0 * 32)> (%s)
    %xs = vdir.load %x[0, %k] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x32xbf16>
    %wt = vdir.load %w[0, %k] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x32xbf16>
    %pt = vdir.compute gemv(%wt, %xs) : (!vdir.tile<32x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x32xf32>
    %added = vdir.store %pt, %y[0, 0] reduce add : !vdir.tile<1x32xf32>, !vdir.buffer<1x32xf32>
  }
}
