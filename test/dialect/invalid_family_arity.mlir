// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Each family takes a fixed number of operands (gemv: 2, or 3 with an
// accumulator).

vdir.program @add(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'add' takes 2 operands (lhs, rhs), got 3
  %u = vdir.compute add(%t, %t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @gemv(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv' takes 2 or 3 operands (weights, x, acc), got 1
  %u = vdir.compute gemv(%t) : (!vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @operand_types(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:25: error: 2 operands but 1 operand types
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

// sum_rows combines the partials of one tile: stack them into its rows.
vdir.program @sum_rows(%a: !vdir.buffer<4x64xf32>, %y: !vdir.buffer<1x64xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x64xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'sum_rows' takes 1 operands (partials), got 2
  %u = vdir.compute sum_rows(%t, %t) : (!vdir.tile<4x64xf32>, !vdir.tile<4x64xf32>) -> !vdir.tile<1x64xf32>
  %s = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xf32>, !vdir.buffer<1x64xf32>
}
