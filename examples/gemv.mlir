// gemv: y = W x, with W 8192x8192 and x, y 1x8192, all bf16.
//
// Tiling. A weight tile is 8 rows x 4096 columns (64 KiB). The store engine
// copies rows of at least 16 bytes, so one row block yields 8 outputs (16 B of
// bf16). K = 8192 is split in two chunks of 4096: the first gemv produces an
// f32 partial sum, the second takes it as its accumulator and rounds the
// result to bf16 once.
//
// x is loaded once, as two 1x4096 tiles, and shared by all 1024 row blocks.
// The repeat keeps the 1024 iterations to a few lines; %r = 8 * %i is the
// first row of block %i.
//
// Built by vdir.frontend.examples.build_gemv().

vdir.program @gemv(%w: !vdir.buffer<8192x8192xbf16>,
                   %x: !vdir.buffer<1x8192xbf16>,
                   %y: !vdir.buffer<1x8192xbf16>) attributes {target = "h200"} {
  %x0 = vdir.load %x[0, 0] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
  %x1 = vdir.load %x[0, 4096] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
  vdir.repeat %i = 0 to 1024 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %w0 = vdir.load %w[%r, 0] : !vdir.buffer<8192x8192xbf16> -> !vdir.tile<8x4096xbf16>
    // partial sum over columns [0, 4096), kept in f32
    %p0 = vdir.compute gemv(%w0, %x0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
    %w1 = vdir.load %w[%r, 4096] : !vdir.buffer<8192x8192xbf16> -> !vdir.tile<8x4096xbf16>
    // columns [4096, 8192) plus the partial sum, rounded to bf16
    %yt = vdir.compute gemv(%w1, %x1, %p0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xbf16>
    %done = vdir.store %yt, %y[0, %r] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8192xbf16>
  }
}
