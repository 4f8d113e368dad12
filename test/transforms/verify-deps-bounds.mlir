// RUN: not vdir-opt %s -p vdir-verify-deps 2>&1 | filecheck %s
// RUN: not vdir-opt %s -p vdir-pipeline 2>&1 | filecheck %s --check-prefix=PIPE

// A dynamic offset is only known once the repeat is expanded: the fourth
// iteration reads rows [48, 64) of a 56-row buffer.

// CHECK: verify-deps-bounds.mlir:[[# @LINE + 5]]:5: error: vdir-verify-deps: load %wt[i=3]: region [48:64, 0:64] is out of the bounds of @w (56x64)
// PIPE: verify-deps-bounds.mlir:[[# @LINE + 4]]:5: error: vdir-pipeline: load %wt[i=3]: region [48:64, 0:64]
vdir.program @oob(%w: !vdir.buffer<56x64xbf16>, %y: !vdir.buffer<64x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<56x64xbf16> -> !vdir.tile<16x64xbf16>
    %t = vdir.store %wt, %y[%r, 0] : !vdir.tile<16x64xbf16>, !vdir.buffer<64x64xbf16>
  }
}
