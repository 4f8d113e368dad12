// RUN: vdir-opt %S/../../examples/argmax.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/argmax.mlir --print-op-generic | vdir-opt | filecheck %s
// RUN: vdir-opt %S/../../examples/argmax.mlir -p vdir-pipeline -t isa | filecheck %s --check-prefix=ISA

// Compiled: slices 0..7 on SMs 0..7, their argmax_partial carrying the base
// in p3 (the listing shows it when nonzero), each store releasing counter
// 0; on SM 8 the load of the partials waits for all eight, and on SM 9 the
// gather by the token id waits for the token's store (counter 1).
// ISA-LABEL: sm 0 compute:
// ISA:       argmax_partial(smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(1, 128, 1) signal
// ISA-LABEL: sm 7 compute:
// ISA:       argmax_partial(smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(1, 104, 1) p3=896 signal
// ISA:       store smem[{{[0-9]+}}] -> @partials+112 {{.*}} release(c0)
// ISA-LABEL: sm 8 load:
// ISA-NEXT:  load  @partials+0 [8 x 16B, stride 16] -> {{.*}} wait(c0>=8*epoch)
// ISA-NEXT:  sm 8 compute:
// ISA-NEXT:  argmax_final(smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(8, 4, 0)
// ISA-NEXT:  sm 8 store:
// ISA-NEXT:  store smem[{{[0-9]+}}] -> @token+0 {{.*}} release(c1)
// ISA-NEXT:  sm 9 load:
// ISA-NEXT:  load  @emb+0 + @token[0] * 512 (@token[0] in 0..999) {{.*}} wait(c1>=1*epoch)

// CHECK:      vdir.program @argmax(%w: !vdir.buffer<1000x256xbf16>, %h: !vdir.buffer<1x256xbf16>, %emb: !vdir.buffer<1000x256xbf16>, %partials: !vdir.buffer<8x4xf32>, %token: !vdir.buffer<1x4xi32>, %next: !vdir.buffer<1x256xbf16>) attributes {target = "h200"} {
// CHECK-NEXT:   %ht = vdir.load %h[0, 0] on load : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
// CHECK-NEXT:   %w0 = vdir.load %w[0, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l0 = vdir.compute gemv(%w0, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b0 = vdir.compute argmax_partial(%l0) {base = 0 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p0 = vdir.store %b0, %partials[0, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w1 = vdir.load %w[128, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l1 = vdir.compute gemv(%w1, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b1 = vdir.compute argmax_partial(%l1) {base = 128 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p1 = vdir.store %b1, %partials[1, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w2 = vdir.load %w[256, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l2 = vdir.compute gemv(%w2, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b2 = vdir.compute argmax_partial(%l2) {base = 256 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p2 = vdir.store %b2, %partials[2, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w3 = vdir.load %w[384, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l3 = vdir.compute gemv(%w3, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b3 = vdir.compute argmax_partial(%l3) {base = 384 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p3 = vdir.store %b3, %partials[3, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w4 = vdir.load %w[512, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l4 = vdir.compute gemv(%w4, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b4 = vdir.compute argmax_partial(%l4) {base = 512 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p4 = vdir.store %b4, %partials[4, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w5 = vdir.load %w[640, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l5 = vdir.compute gemv(%w5, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b5 = vdir.compute argmax_partial(%l5) {base = 640 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p5 = vdir.store %b5, %partials[5, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w6 = vdir.load %w[768, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
// CHECK-NEXT:   %l6 = vdir.compute gemv(%w6, %ht) on compute : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
// CHECK-NEXT:   %b6 = vdir.compute argmax_partial(%l6) {base = 768 : i64} on compute : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p6 = vdir.store %b6, %partials[6, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %w7 = vdir.load %w[896, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<104x256xbf16>
// CHECK-NEXT:   %l7 = vdir.compute gemv(%w7, %ht) on compute : (!vdir.tile<104x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x104xf32>
// CHECK-NEXT:   %b7 = vdir.compute argmax_partial(%l7) {base = 896 : i64} on compute : (!vdir.tile<1x104xf32>) -> !vdir.tile<1x4xf32>
// CHECK-NEXT:   %p7 = vdir.store %b7, %partials[7, 0] on store : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
// CHECK-NEXT:   %all = vdir.load %partials[0, 0] on load : !vdir.buffer<8x4xf32> -> !vdir.tile<8x4xf32>
// CHECK-NEXT:   %best = vdir.compute argmax_final(%all) {stride = 0 : i64} on compute : (!vdir.tile<8x4xf32>) -> !vdir.tile<1x4xi32>
// CHECK-NEXT:   %stored = vdir.store %best, %token[0, 0] on store : !vdir.tile<1x4xi32>, !vdir.buffer<1x4xi32>
// CHECK-NEXT:   %id = vdir.read %token[0, 0] : !vdir.buffer<1x4xi32>
// CHECK-NEXT:   %e = vdir.load %emb[%id, 0] on load : !vdir.buffer<1000x256xbf16> -> !vdir.tile<1x256xbf16>
// CHECK-NEXT:   %gathered = vdir.store %e, %next[0, 0] on store : !vdir.tile<1x256xbf16>, !vdir.buffer<1x256xbf16>
// CHECK-NEXT: }
