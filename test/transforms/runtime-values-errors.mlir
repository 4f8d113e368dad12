// RUN: vdir-opt %s -p vdir-place --split-input-file --print-diagnostics | filecheck %s

// What the micro-op ISA cannot evaluate at run time is a located error:
// a region a scalar's declared range can move out of its buffer, an index
// that depends on two runtime values or divides one, a runtime-bounded
// repeat inside another, a condition that is false at compile time, and a
// runtime column offset that does not move in 16-byte steps.

vdir.program @range(%x: !vdir.buffer<64x16xbf16>, %pos: index in 0 to 64) {
  // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:3: error: vdir-place: load %t: rows [%pos, %pos + 2) reach [0, 65) for %pos in 0 to 64, outside @x's [0, 64)
  %t = vdir.load %x[%pos, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<2x16xbf16>
  %s = vdir.store %t, %x[0, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<64x16xbf16>
}

// -----

vdir.program @two_values(%x: !vdir.buffer<64x16xbf16>, %a: index in 0 to 4, %b: index in 0 to 4) {
  // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:3: error: vdir-place: an index may depend on one runtime value, not on both %a and %b
  %r = affine.apply affine_map<(d0, d1) -> (d0 + d1)> (%a, %b)
  %t = vdir.load %x[%r, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<2x16xbf16>
  %s = vdir.store %t, %x[0, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<64x16xbf16>
}

// -----

vdir.program @divided(%x: !vdir.buffer<64x16xbf16>, %a: index in 0 to 4) {
  // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:3: error: vdir-place: runtime value %a can only be scaled and offset, not divided
  %r = affine.apply affine_map<(d0) -> (d0 floordiv 2)> (%a)
  %t = vdir.load %x[%r, 0] : !vdir.buffer<64x16xbf16> -> !vdir.tile<2x16xbf16>
  %s = vdir.store %t, %x[0, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<64x16xbf16>
}

// -----

vdir.program @nested(%x: !vdir.buffer<64x16xbf16>, %n: index in 0 to 4) {
  vdir.repeat %i = 0 to %n max 4 {
    // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:5: error: vdir-place: a runtime-bounded vdir.repeat cannot be nested in another one
    vdir.repeat %j = 0 to %n max 4 {
    }
  }
}

// -----

vdir.program @false(%x: !vdir.buffer<64x16xbf16>) {
  vdir.repeat %i = 0 to 2 {
    // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:5: error: vdir-place: load %t[i=0]: its condition is false at compile time (0 >= 1); remove the micro-op instead
    %t = vdir.load %x[0, 0] when %i >= 1 : !vdir.buffer<64x16xbf16> -> !vdir.tile<2x16xbf16>
    %s = vdir.store %t, %x[2, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}

// -----

vdir.program @column(%x: !vdir.buffer<4x64xbf16>, %c: index in 0 to 4) {
  // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:3: error: vdir-place: load %t: a runtime column offset (%c) must move in 16-byte steps
  %t = vdir.load %x[0, %c] : !vdir.buffer<4x64xbf16> -> !vdir.tile<1x16xbf16>
  %s = vdir.store %t, %x[1, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @two_conditions(%x: !vdir.buffer<64x16xbf16>, %n: index in 0 to 4) {
  vdir.repeat %i = 0 to %n max 4 {
    // CHECK: runtime-values-errors.mlir:[[# @LINE + 1]]:5: error: vdir-place: load %t[i=0]: a micro-op inside a runtime-bounded repeat cannot have its own condition (one condition per micro-op)
    %t = vdir.load %x[0, 0] when %n >= 1 : !vdir.buffer<64x16xbf16> -> !vdir.tile<2x16xbf16>
    %s = vdir.store %t, %x[2, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<64x16xbf16>
  }
}
