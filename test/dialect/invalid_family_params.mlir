// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Family parameters: each required one present, no unknown ones, numbers
// only, values in range.

vdir.program @missing(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'rmsnorm' needs parameter 'eps'
  %n = vdir.compute rmsnorm(%t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %n, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @extra(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'add' has no parameter 'alpha'
  %u = vdir.compute add(%t, %t) {alpha = 2.0 : f32} : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @not_a_number(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: parameter 'eps' must be a number, got "small"
  %n = vdir.compute rmsnorm(%t, %t) {eps = "small"} : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %n, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @eps_zero(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'rmsnorm': eps must be positive
  %n = vdir.compute rmsnorm(%t, %t) {eps = 0.0 : f32} : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %n, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @operand_index(%w: !vdir.buffer<8x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %up = vdir.load %y[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv_silu_mul': operand must be 0 (silu of the gemv) or 1
  %yt = vdir.compute gemv_silu_mul(%wt, %xt, %up) {operand = 2 : i64} : (!vdir.tile<8x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
