// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Buffers and tiles hold bf16, f32, i32 or i64 elements only. The parser
// rejects anything else at the type itself.

// CHECK: error: vdir.buffer element type must be bf16, f32, i32 or i64, got i16
vdir.program @p(%a: !vdir.buffer<4x8xi16>) {
}

// -----

vdir.program @p(%a: !vdir.buffer<4x8xbf16>) {
  // CHECK: error: vdir.tile element type must be bf16, f32, i32 or i64, got f16
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xf16>
}

// -----

// CHECK: error: vdir.buffer element type must be bf16, f32, i32 or i64, got f64
vdir.program @p(%a: !vdir.buffer<4x8xf64>) {
}

// -----

// Only the signless i32 and i64: a signed or unsigned integer type is another type.
// CHECK: error: vdir.buffer element type must be bf16, f32, i32 or i64, got ui32
vdir.program @p(%a: !vdir.buffer<4x8xui32>) {
}
