// mlp: one Llama-style MLP block with its residual connection.
//
//   xn  = rmsnorm(h, g)                      h, g: 1x2048
//   act = silu(Wg . xn) * (Wu . xn)          Wg, Wu: 8192x2048, act: 1x8192
//   out = h + Wd . act                       Wd: 2048x8192, out: 1x2048
//
// Gate and up: 512 row blocks of 16x2048 weight tiles (64 KiB each); each
// block's 16 activations are stored to the `act` argument, a scratch buffer.
//
// Down: act is read back as two 1x4096 tiles. Its loads come after the
// stores in program order, and the dependency analysis derives the
// read-after-write through `act` from that order, so no token is needed.
// 256 row blocks of 8x4096 tiles (64 KiB), two K chunks (f32 partial sum,
// then accumulate), then the residual: the block's 8 entries of h are added
// and the 8 outputs (16 B) are stored.
//
// Built by vdir.frontend.examples.build_mlp_block().

vdir.program @mlp(%h: !vdir.buffer<1x2048xbf16>,
                  %g: !vdir.buffer<1x2048xbf16>,
                  %wg: !vdir.buffer<8192x2048xbf16>,
                  %wu: !vdir.buffer<8192x2048xbf16>,
                  %wd: !vdir.buffer<2048x8192xbf16>,
                  %act: !vdir.buffer<1x8192xbf16>,
                  %out: !vdir.buffer<1x2048xbf16>) attributes {target = "h200"} {
  %ht = vdir.load %h[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x2048xbf16>
  %xn = vdir.compute rmsnorm(%ht, %gt) {eps = 1.000000e-05 : f32} : (!vdir.tile<1x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>

  // gate and up projections, silu_mul, 16 activations per block
  vdir.repeat %j = 0 to 512 {
    %rj = affine.apply affine_map<(d0) -> (d0 * 16)> (%j)
    %wgt = vdir.load %wg[%rj, 0] : !vdir.buffer<8192x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %wut = vdir.load %wu[%rj, 0] : !vdir.buffer<8192x2048xbf16> -> !vdir.tile<16x2048xbf16>
    %gate = vdir.compute gemv(%wgt, %xn) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %up = vdir.compute gemv(%wut, %xn) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
    %a = vdir.compute silu_mul(%gate, %up) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
    %a_saved = vdir.store %a, %act[0, %rj] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x8192xbf16>
  }

  // down projection over the stored activations, plus the residual
  %act0 = vdir.load %act[0, 0] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
  %act1 = vdir.load %act[0, 4096] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x4096xbf16>
  vdir.repeat %k = 0 to 256 {
    %rk = affine.apply affine_map<(d0) -> (d0 * 8)> (%k)
    %wd0 = vdir.load %wd[%rk, 0] : !vdir.buffer<2048x8192xbf16> -> !vdir.tile<8x4096xbf16>
    %dp0 = vdir.compute gemv(%wd0, %act0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
    %wd1 = vdir.load %wd[%rk, 4096] : !vdir.buffer<2048x8192xbf16> -> !vdir.tile<8x4096xbf16>
    %d = vdir.compute gemv(%wd1, %act1, %dp0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xbf16>
    %res = vdir.load %h[0, %rk] : !vdir.buffer<1x2048xbf16> -> !vdir.tile<1x8xbf16>
    %o = vdir.compute add(%d, %res) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
    %o_saved = vdir.store %o, %out[0, %rk] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x2048xbf16>
  }
}
