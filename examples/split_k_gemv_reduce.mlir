// split_k_gemv_reduce: y = W x with K split across SMs, W 1024x8192 and x
// 1x8192 bf16, y 1x1024 f32. The one-phase form of split_k_gemv.mlir: each
// partial sum is added straight into y by a reducing store.
//
// Chunk %s of row block %i: a 32x1024 weight tile times the chunk of x gives
// an f32 partial sum (1x32), which `reduce add` adds into y[0, r:r+32]. There
// is no partials buffer and no combine phase. y is read as well as written
// (an inout buffer): the caller passes it zeroed.
//
// Order-dependent: f32 addition is not associative, and the order of
// reducing stores on different SMs is in general not fixed, so a result may
// differ from another run's in the last bits. Here the dependency analysis
// orders the 8 stores to each row block like any two writes (program order,
// a global counter between SMs), so the sum is y = ((p0 + p1) + ...) + p7
// from a zero y. That order is not a promise of the form: the deterministic
// reduction is split_k_gemv.mlir's sum_rows, and no pass ever chooses this one.
//
// Built by vdir.frontend.examples.build_split_k_gemv(reduce=True).

vdir.program @split_k_gemv_reduce(%w: !vdir.buffer<1024x8192xbf16>,
                                  %x: !vdir.buffer<1x8192xbf16>,
                                  %y: !vdir.buffer<1x1024xf32>) attributes {target = "h200"} {
  vdir.repeat %s = 0 to 8 {
    %k = affine.apply affine_map<(d0) -> ((d0 * 1024))> (%s)
    %xs = vdir.load %x[0, %k] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x1024xbf16>
    vdir.repeat %i = 0 to 32 {
      %r = affine.apply affine_map<(d0) -> ((d0 * 32))> (%i)
      %wt = vdir.load %w[%r, %k] : !vdir.buffer<1024x8192xbf16> -> !vdir.tile<32x1024xbf16>
      %pt = vdir.compute gemv(%wt, %xs) : (!vdir.tile<32x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x32xf32>
      %added = vdir.store %pt, %y[0, %r] reduce add : !vdir.tile<1x32xf32>, !vdir.buffer<1x1024xf32>
    }
  }
}
