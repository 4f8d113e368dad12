// mlp_stack: 16 MLP blocks (examples/mlp.mlir) in sequence.
//
// Weights are stacked by layer: layer l's rows of Wg and Wu start at
// l * 8192 (131072 = 16 x 8192 rows in all), its rows of Wd at l * 2048
// (32768 = 16 x 2048), its norm weight is row l of g.
//
// The residual stream is one buffer `hs` of 17 rows: layer l reads row l and
// writes row l + 1, so row 0 is the input and row 16 the output. `act` has
// one scratch row per layer. Every cross-layer dependency goes through `hs`
// and is derived from program order by the dependency analysis.
//
// The outer repeat keeps 16 layers (77,904 micro-ops once
// expanded) to the size of one block; offsets combine the layer and block
// induction variables through affine maps.
//
// Built by vdir.frontend.examples.build_mlp_stack().

vdir.program @mlp_stack(%hs: !vdir.buffer<17x2048xbf16>,
                        %g: !vdir.buffer<16x2048xbf16>,
                        %wg: !vdir.buffer<131072x2048xbf16>,
                        %wu: !vdir.buffer<131072x2048xbf16>,
                        %wd: !vdir.buffer<32768x8192xbf16>,
                        %act: !vdir.buffer<16x8192xbf16>) attributes {target = "h200"} {
  vdir.repeat %l = 0 to 16 {
    %ht = vdir.load %hs[%l, 0] : !vdir.buffer<17x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %gt = vdir.load %g[%l, 0] : !vdir.buffer<16x2048xbf16> -> !vdir.tile<1x2048xbf16>
    %xn = vdir.compute rmsnorm(%ht, %gt) {eps = 1.000000e-05 : f32} : (!vdir.tile<1x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>

    // gate and up projections of layer %l
    vdir.repeat %j = 0 to 512 {
      %wrow = affine.apply affine_map<(d0, d1) -> (d0 * 8192 + d1 * 16)> (%l, %j)
      %rj = affine.apply affine_map<(d0) -> (d0 * 16)> (%j)
      %wgt = vdir.load %wg[%wrow, 0] : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %wut = vdir.load %wu[%wrow, 0] : !vdir.buffer<131072x2048xbf16> -> !vdir.tile<16x2048xbf16>
      %gate = vdir.compute gemv(%wgt, %xn) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %up = vdir.compute gemv(%wut, %xn) : (!vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x16xbf16>
      %a = vdir.compute silu_mul(%gate, %up) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
      %a_saved = vdir.store %a, %act[%l, %rj] : !vdir.tile<1x16xbf16>, !vdir.buffer<16x8192xbf16>
    }

    // down projection and residual, into row %l + 1 of the stream
    %act0 = vdir.load %act[%l, 0] : !vdir.buffer<16x8192xbf16> -> !vdir.tile<1x4096xbf16>
    %act1 = vdir.load %act[%l, 4096] : !vdir.buffer<16x8192xbf16> -> !vdir.tile<1x4096xbf16>
    %next = affine.apply affine_map<(d0) -> (d0 + 1)> (%l)
    vdir.repeat %k = 0 to 256 {
      %drow = affine.apply affine_map<(d0, d1) -> (d0 * 2048 + d1 * 8)> (%l, %k)
      %rk = affine.apply affine_map<(d0) -> (d0 * 8)> (%k)
      %wd0 = vdir.load %wd[%drow, 0] : !vdir.buffer<32768x8192xbf16> -> !vdir.tile<8x4096xbf16>
      %dp0 = vdir.compute gemv(%wd0, %act0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
      %wd1 = vdir.load %wd[%drow, 4096] : !vdir.buffer<32768x8192xbf16> -> !vdir.tile<8x4096xbf16>
      %d = vdir.compute gemv(%wd1, %act1, %dp0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xbf16>
      %res = vdir.load %hs[%l, %rk] : !vdir.buffer<17x2048xbf16> -> !vdir.tile<1x8xbf16>
      %o = vdir.compute add(%d, %res) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
      %o_saved = vdir.store %o, %hs[%next, %rk] : !vdir.tile<1x8xbf16>, !vdir.buffer<17x2048xbf16>
    }
  }
}
