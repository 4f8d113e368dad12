// argmax: greedy decoding's last step, a deterministic two-phase argmax
// across SMs. The logits of a 1000-token vocabulary, W h (W 1000x256 bf16,
// h 1x256 bf16, f32 logits), are computed in 8 slices; the token id is
// written as an i32 on the device, where the next step reads it.
//
// Phase 1. Slice %s (rows base..base+127, the last one 104 rows: 1000 is
// not a multiple of 128) is a gemv of its weight rows, and argmax_partial
// of its f32 logits gives [best logit, base + its index, 0, 0], stored to
// row s of %partials. Placement spreads the slices over the SMs.
//
// Phase 2. The load of %partials comes after the eight stores in program
// order, so it waits for all of them through a cross-SM counter.
// argmax_final picks the best row, of equal logits the lowest token id
// (numpy.argmax's answer, whatever SM finished first), and stores the id
// as an i32 to %token.
//
// Next step. The id is read on the device (vdir.read, after the store)
// and gathers the token's embedding row, the next step's input.
//
// Built by vdir.frontend.examples.build_argmax().

vdir.program @argmax(%w: !vdir.buffer<1000x256xbf16>, %h: !vdir.buffer<1x256xbf16>,
                     %emb: !vdir.buffer<1000x256xbf16>, %partials: !vdir.buffer<8x4xf32>,
                     %token: !vdir.buffer<1x4xi32>, %next: !vdir.buffer<1x256xbf16>) attributes {target = "h200"} {
  %ht = vdir.load %h[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  %w0 = vdir.load %w[0, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l0 = vdir.compute gemv(%w0, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b0 = vdir.compute argmax_partial(%l0) {base = 0 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p0 = vdir.store %b0, %partials[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w1 = vdir.load %w[128, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l1 = vdir.compute gemv(%w1, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b1 = vdir.compute argmax_partial(%l1) {base = 128 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p1 = vdir.store %b1, %partials[1, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w2 = vdir.load %w[256, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l2 = vdir.compute gemv(%w2, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b2 = vdir.compute argmax_partial(%l2) {base = 256 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p2 = vdir.store %b2, %partials[2, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w3 = vdir.load %w[384, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l3 = vdir.compute gemv(%w3, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b3 = vdir.compute argmax_partial(%l3) {base = 384 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p3 = vdir.store %b3, %partials[3, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w4 = vdir.load %w[512, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l4 = vdir.compute gemv(%w4, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b4 = vdir.compute argmax_partial(%l4) {base = 512 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p4 = vdir.store %b4, %partials[4, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w5 = vdir.load %w[640, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l5 = vdir.compute gemv(%w5, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b5 = vdir.compute argmax_partial(%l5) {base = 640 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p5 = vdir.store %b5, %partials[5, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w6 = vdir.load %w[768, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<128x256xbf16>
  %l6 = vdir.compute gemv(%w6, %ht) : (!vdir.tile<128x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x128xf32>
  %b6 = vdir.compute argmax_partial(%l6) {base = 768 : i64} : (!vdir.tile<1x128xf32>) -> !vdir.tile<1x4xf32>
  %p6 = vdir.store %b6, %partials[6, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %w7 = vdir.load %w[896, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<104x256xbf16>
  %l7 = vdir.compute gemv(%w7, %ht) : (!vdir.tile<104x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x104xf32>
  %b7 = vdir.compute argmax_partial(%l7) {base = 896 : i64} : (!vdir.tile<1x104xf32>) -> !vdir.tile<1x4xf32>
  %p7 = vdir.store %b7, %partials[7, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<8x4xf32>
  %all = vdir.load %partials[0, 0] : !vdir.buffer<8x4xf32> -> !vdir.tile<8x4xf32>
  %best = vdir.compute argmax_final(%all) {stride = 0 : i64} : (!vdir.tile<8x4xf32>) -> !vdir.tile<1x4xi32>
  %stored = vdir.store %best, %token[0, 0] : !vdir.tile<1x4xi32>, !vdir.buffer<1x4xi32>
  %id = vdir.read %token[0, 0] : !vdir.buffer<1x4xi32>
  %e = vdir.load %emb[%id, 0] : !vdir.buffer<1000x256xbf16> -> !vdir.tile<1x256xbf16>
  %gathered = vdir.store %e, %next[0, 0] : !vdir.tile<1x256xbf16>, !vdir.buffer<1x256xbf16>
}
