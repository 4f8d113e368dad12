// RUN: not vdir-opt %s -p vdir-verify-deps 2>&1 | filecheck %s

// A store's micro-op name ("store to @y") says its kind already: the message
// names the micro-op once.

// CHECK: verify-deps-store-bounds.mlir:[[# @LINE + 5]]:5: error: vdir-verify-deps: store to @y[i=3]: region [48:64, 0:64] is out of the bounds of @y (56x64)
vdir.program @store_oob(%w: !vdir.buffer<64x64xbf16>, %y: !vdir.buffer<56x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<16x64xbf16>
    %t = vdir.store %wt, %y[%r, 0] : !vdir.tile<16x64xbf16>, !vdir.buffer<56x64xbf16>
  }
}
