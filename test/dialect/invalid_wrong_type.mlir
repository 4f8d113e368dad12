// RUN: vdir-opt %s --verify-diagnostics --split-input-file | filecheck %s

// The types written in a micro-op's format must be its operands' types, and
// each operand slot takes its own kind of type.

vdir.program @load_source(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x16xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xbf16>
}
// CHECK: error: source is !vdir.buffer<4x8xbf16>, but the format says !vdir.buffer<4x16xbf16>

// -----

vdir.program @load_result(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.token
}
// CHECK: error: a load produces a !vdir.tile, not !vdir.token

// -----

vdir.program @store_value(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<2x8xbf16>, !vdir.buffer<4x8xbf16>
}
// CHECK: error: stored value is !vdir.tile<4x8xbf16>, but the format says !vdir.tile<2x8xbf16>

// -----

vdir.program @store_dest(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xf32>
}
// CHECK: error: destination is !vdir.buffer<4x8xbf16>, but the format says !vdir.buffer<4x8xf32>

// -----

vdir.program @compute_operand(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  %u = vdir.compute add(%t, %t) : (!vdir.tile<4x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<4x8xbf16>
}
// CHECK: error: operand %t is !vdir.tile<4x8xbf16>, not !vdir.tile<1x8xbf16>

// -----

vdir.program @token_as_dependency(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // CHECK: error: %t is !vdir.tile<4x8xbf16>; 'after' takes !vdir.token values
  %u = vdir.load %a[0, 0] after %t : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xbf16>
}
