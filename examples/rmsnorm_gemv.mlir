// rmsnorm_gemv: y = W . rmsnorm(x, g), eps = 1e-5.
//
// x and the norm weight g are 1x2048, W is 8192x2048, y is 1x8192 (bf16).
// The normalised vector %xn is computed once and stays on chip; every row
// block's gemv reads it. Weight tiles are 16 rows x 2048 columns (64 KiB),
// so the 512 row blocks each produce 16 outputs (32 B).
//
// vdir-fuse may merge the rmsnorm into the gemvs (family rmsnorm_gemv) when
// its cost model says so; this file is the unfused input.
//
// Built by vdir.frontend.examples.build_rmsnorm_gemv().

vdir.program @rmsnorm_gemv(%x: !vdir.buffer<1x2048xbf16>,
                           %g: !vdir.buffer<1x2048xbf16>,
                           %w: !vdir.buffer<8192x2048xbf16>,
                           %y: !vdir.buffer<1x8192xbf16>) attributes {target = "h200"} {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.000000e-05 : f32} : (!vdir.tile<1x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>
  vdir.repeat %i = 0 to 512 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<8192x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %yt = vdir.compute gemv(%wt, %xn) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %done = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x8192xbf16>
  }
}
