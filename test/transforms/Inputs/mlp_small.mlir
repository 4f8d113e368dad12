// A small MLP block (64-wide) shared by the transform tests; not a test itself.
vdir.program @mlp(%h: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %wg: !vdir.buffer<64x64xbf16>, %wu: !vdir.buffer<64x64xbf16>, %wd: !vdir.buffer<64x64xbf16>, %act: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %x = vdir.load %h[0, 0] on load : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] on load : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %xn = vdir.compute rmsnorm(%x, %gt) {eps = 1.0e-05 : f32} on compute : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 32)> (%i)
    %wgt = vdir.load %wg[%r, 0] on load : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
    %gate = vdir.compute gemv(%wgt, %xn) on compute : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
    %wut = vdir.load %wu[%r, 0] on load : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
    %up = vdir.compute gemv(%wut, %xn) on compute : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
    %a = vdir.compute silu_mul(%gate, %up) on compute : (!vdir.tile<1x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x32xbf16>
    %t = vdir.store %a, %act[0, %r] on store : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
  }
  %av = vdir.load %act[0, 0] on load : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.repeat %j = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 32)> (%j)
    %wdt = vdir.load %wd[%r, 0] on load : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
    %d = vdir.compute gemv(%wdt, %av) on compute : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
    %res = vdir.load %h[0, %r] on load : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x32xbf16>
    %o = vdir.compute add(%d, %res) on compute : (!vdir.tile<1x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x32xbf16>
    %t2 = vdir.store %o, %out[0, %r] on store : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
  }
}
