// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The types written in a micro-op's format must be its operands' types, and
// each operand slot takes its own kind of type.

vdir.program @load_source(%a: !vdir.buffer<4x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:18: error: SSA value %a has type !vdir.buffer<4x8xbf16>, but is used as !vdir.buffer<4x16xbf16>
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x16xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xbf16>
}

// -----

vdir.program @load_result(%a: !vdir.buffer<4x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.load: !vdir.token should be of base attribute vdir.tile
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.token
}

// -----

vdir.program @store_value(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:19: error: SSA value %t has type !vdir.tile<4x8xbf16>, but is used as !vdir.tile<2x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<2x8xbf16>, !vdir.buffer<4x8xbf16>
}

// -----

vdir.program @store_dest(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:23: error: SSA value %a has type !vdir.buffer<4x8xbf16>, but is used as !vdir.buffer<4x8xf32>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xf32>
}

// -----

vdir.program @compute_operand(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:29: error: SSA value %t has type !vdir.tile<4x8xbf16>, but is used as !vdir.tile<1x8xbf16>
  %u = vdir.compute add(%t, %t) : (!vdir.tile<4x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<4x8xbf16>
}

// -----

vdir.program @token_as_dependency(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:33: error: SSA value %t has type !vdir.tile<4x8xbf16>, but is used as !vdir.token
  %u = vdir.load %a[0, 0] after %t : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xbf16>
}
