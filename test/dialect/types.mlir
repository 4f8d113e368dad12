// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The dialect's types and attribute: !vdir.buffer and !vdir.tile (rows x
// columns x bf16|f32), !vdir.token, and #vdir.engine<kind> (generic form).

vdir.program @types(%b16: !vdir.buffer<1x8xbf16>, %b32: !vdir.buffer<131072x2048xf32>) {
  %t16 = "vdir.load"(%b16) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %t32 = vdir.load %b32[131068, 2044] : !vdir.buffer<131072x2048xf32> -> !vdir.tile<4x4xf32>
  %tok = "vdir.store"(%t16, %b16) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>) -> !vdir.token
  %tok2 = vdir.store %t32, %b32[0, 0] after %tok : !vdir.tile<4x4xf32>, !vdir.buffer<131072x2048xf32>
}

// CHECK-LABEL: vdir.program @types(%b16: !vdir.buffer<1x8xbf16>, %b32: !vdir.buffer<131072x2048xf32>)
// CHECK:       %t16 = vdir.load %b16[0, 0] on load : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
// CHECK:       %t32 = vdir.load %b32[131068, 2044] on load : !vdir.buffer<131072x2048xf32> -> !vdir.tile<4x4xf32>
// CHECK:       %tok = vdir.store %t16, %b16[0, 0] on store : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
// CHECK:       %tok2 = vdir.store %t32, %b32[0, 0] on store after %tok

// GENERIC:     engine = #vdir.engine<load>
// GENERIC:     -> !vdir.tile<4x4xf32>
// GENERIC:     engine = #vdir.engine<store>{{.*}} -> !vdir.token
// GENERIC:     (!vdir.tile<4x4xf32>, !vdir.buffer<131072x2048xf32>, !vdir.token) -> !vdir.token
