// split_k_gemv: y = W x with K split across SMs, W 1024x8192, x 1x8192, y
// 1x1024, all bf16. A deterministic two-phase reduction.
//
// Why. 1024 rows make 32 row blocks of 32 rows: too few to keep 132 SMs
// busy. Splitting K = 8192 into 8 chunks of 1024 gives 256 independent
// gemvs, which vdir-place spreads over the SMs.
//
// Phase 1. Chunk %s of row block %i: a 32x1024 weight tile (64 KiB) times the
// chunk of x gives an f32 partial sum (1x32), stored to row %s of the f32
// buffer %partials (8x1024).
//
// Phase 2. Each block of 256 columns loads %partials[0:8, c:c+256]. The load
// comes after the stores in program order, so the dependency analysis makes
// it wait for every store to that region: across SMs, through a global
// counter. sum_rows adds the 8 rows in order (row 0 first, f32) and rounds
// once to bf16, so the result does not depend on which SM finished first.
// %partials is an output too (the per-chunk sums).
//
// Built by vdir.frontend.examples.build_split_k_gemv().

vdir.program @split_k_gemv(%w: !vdir.buffer<1024x8192xbf16>,
                           %x: !vdir.buffer<1x8192xbf16>,
                           %partials: !vdir.buffer<8x1024xf32>,
                           %y: !vdir.buffer<1x1024xbf16>) attributes {target = "h200"} {
  vdir.repeat %s = 0 to 8 {
    %k = affine.apply affine_map<(d0) -> ((d0 * 1024))> (%s)
    %xs = vdir.load %x[0, %k] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x1024xbf16>
    vdir.repeat %i = 0 to 32 {
      %r = affine.apply affine_map<(d0) -> ((d0 * 32))> (%i)
      %wt = vdir.load %w[%r, %k] : !vdir.buffer<1024x8192xbf16> -> !vdir.tile<32x1024xbf16>
      %pt = vdir.compute gemv(%wt, %xs) : (!vdir.tile<32x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x32xf32>
      %stored = vdir.store %pt, %partials[%s, %r] : !vdir.tile<1x32xf32>, !vdir.buffer<8x1024xf32>
    }
  }
  vdir.repeat %j = 0 to 4 {
    %c = affine.apply affine_map<(d0) -> ((d0 * 256))> (%j)
    %parts = vdir.load %partials[0, %c] : !vdir.buffer<8x1024xf32> -> !vdir.tile<8x256xf32>
    %yt = vdir.compute sum_rows(%parts) : (!vdir.tile<8x256xf32>) -> !vdir.tile<1x256xbf16>
    %done = vdir.store %yt, %y[0, %c] : !vdir.tile<1x256xbf16>, !vdir.buffer<1x1024xbf16>
  }
}
