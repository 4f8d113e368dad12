// Every kind of runtime value in one small program, compiled once and run
// for any token id, position and length:
//
// * the token id is read on the device (%ids, written by the host or by an
//   earlier launch) and gathers its embedding row; the row it selects is
//   checked on the device (a bad id stops the launch with an error);
// * the row is appended to a KV-like cache at the launch-time position %pos;
// * a runtime-length loop scores the cache's first %blocks row blocks
//   against the row (one gemv per block, on many SMs), each block's f32
//   scores going to its row of %partial (the rows of blocks that do not run
//   keep the values the caller gave);
// * a two-phase reduction adds the partial rows in a fixed order (sum_rows),
//   after a cross-SM counter says that every block's store has landed.
//
//   vdir-run examples/runtime_values.mlir --check --scalar pos=10 --scalar blocks=3

vdir.program @runtime_values(%ids: !vdir.buffer<1x4xi32>, %emb: !vdir.buffer<256x64xbf16>,
                             %cache: !vdir.buffer<64x64xbf16>, %partial: !vdir.buffer<8x8xf32>,
                             %out: !vdir.buffer<1x8xf32>, %pos: index in 0 to 64, %blocks: index in 1 to 9) {
  %tok = vdir.read %ids[0, 0] : !vdir.buffer<1x4xi32>
  %q = vdir.load %emb[%tok, 0] : !vdir.buffer<256x64xbf16> -> !vdir.tile<1x64xbf16>
  %append = vdir.store %q, %cache[%pos, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<64x64xbf16>
  vdir.repeat %b = 0 to %blocks max 8 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%b)
    %k = vdir.load %cache[%r, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<8x64xbf16>
    %s = vdir.compute gemv(%k, %q) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x8xf32>
    %p = vdir.store %s, %partial[%b, 0] : !vdir.tile<1x8xf32>, !vdir.buffer<8x8xf32>
  }
  %all = vdir.load %partial[0, 0] : !vdir.buffer<8x8xf32> -> !vdir.tile<8x8xf32>
  %sum = vdir.compute sum_rows(%all) : (!vdir.tile<8x8xf32>) -> !vdir.tile<1x8xf32>
  %done = vdir.store %sum, %out[0, 0] : !vdir.tile<1x8xf32>, !vdir.buffer<1x8xf32>
}
