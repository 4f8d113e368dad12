// RUN: vdir-opt %s -p vdir-place --split-input-file --print-diagnostics | filecheck %s

// An offset's affine map that divides by zero (mod, floordiv, ceildiv by the
// constant 0) is a located error when the program is expanded, found once per
// map rather than at each evaluation; a division that xDSL folds while
// parsing, or a non-constant divisor it cannot represent, is a parse error at
// the map.

vdir.program @mod_zero(%x: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<8x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    // CHECK: affine-division-errors.mlir:[[# @LINE + 1]]:5: error: vdir-place: affine expression '(d0 mod 0)' divides by zero
    %r = affine.apply affine_map<(d0) -> (d0 mod 0)> (%i)
    %t = vdir.load %x[%r, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.store %t, %y[%r, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<8x64xbf16>
  }
}

// -----

vdir.program @floordiv_zero(%x: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<8x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    // CHECK: affine-division-errors.mlir:[[# @LINE + 1]]:5: error: vdir-place: affine expression '(d0 floordiv 0)' divides by zero
    %r = affine.apply affine_map<(d0) -> (d0 floordiv 0)> (%i)
    %t = vdir.load %x[%r, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.store %t, %y[%r, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<8x64xbf16>
  }
}

// -----

vdir.program @ceildiv_zero(%x: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<8x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    // CHECK: affine-division-errors.mlir:[[# @LINE + 1]]:5: error: vdir-place: affine expression '((d0 * 2) ceildiv 0)' divides by zero
    %r = affine.apply affine_map<(d0) -> ((d0 * 2) ceildiv 0)> (%i)
    %t = vdir.load %x[%r, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.store %t, %y[%r, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<8x64xbf16>
  }
}

// -----

vdir.program @folded_zero(%x: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<8x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    // CHECK: affine-division-errors.mlir:[[# @LINE + 1]]:34: error: the affine map divides by zero
    %r = affine.apply affine_map<(d0) -> (d0 + 4 mod 0)> (%i)
    %t = vdir.load %x[%r, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.store %t, %y[%r, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<8x64xbf16>
  }
}

// -----

vdir.program @dim_divisor(%x: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<8x64xbf16>) {
  vdir.repeat %i = 0 to 4 {
    // CHECK: affine-division-errors.mlir:[[# @LINE + 1]]:34: error: the affine map is not supported: Mod with non-constant (semi-affine) is not supported yet
    %r = affine.apply affine_map<(d0) -> (d0 mod d0)> (%i)
    %t = vdir.load %x[%r, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<1x64xbf16>
    %s = vdir.store %t, %y[%r, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<8x64xbf16>
  }
}
