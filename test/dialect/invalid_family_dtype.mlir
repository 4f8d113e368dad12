// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Family inputs are bf16 (only gemv's accumulator is f32, add takes f32
// operands too, sum_rows takes f32 only); no family computes on i32.

vdir.program @gemv(%w: !vdir.buffer<8x64xf32>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xf32> -> !vdir.tile<8x64xf32>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv': weights must be bf16, got 8x64xf32
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xf32>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @add_i32(%a: !vdir.buffer<1x8xi32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xi32> -> !vdir.tile<1x8xi32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'add': lhs must be bf16 or f32, got 1x8xi32
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x8xi32>, !vdir.tile<1x8xi32>) -> !vdir.tile<1x8xi32>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xi32>, !vdir.buffer<1x8xi32>
}

// -----

vdir.program @add_mixed(%a: !vdir.buffer<1x8xf32>, %b: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xf32> -> !vdir.tile<1x8xf32>
  %v = vdir.load %b[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'add': operand dtypes differ (1x8xf32 vs 1x8xbf16)
  %u = vdir.compute add(%t, %v) : (!vdir.tile<1x8xf32>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xf32>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xf32>, !vdir.buffer<1x8xf32>
}

// -----

vdir.program @silu_mul_i32(%a: !vdir.buffer<1x8xi32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xi32> -> !vdir.tile<1x8xi32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'silu_mul': lhs must be bf16, got 1x8xi32
  %u = vdir.compute silu_mul(%t, %t) : (!vdir.tile<1x8xi32>, !vdir.tile<1x8xi32>) -> !vdir.tile<1x8xi32>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xi32>, !vdir.buffer<1x8xi32>
}

// -----

vdir.program @sum_rows_bf16(%a: !vdir.buffer<4x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'sum_rows': partials must be f32, got 4x64xbf16
  %u = vdir.compute sum_rows(%t) : (!vdir.tile<4x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @sum_rows_i32(%a: !vdir.buffer<4x64xi32>, %y: !vdir.buffer<1x64xi32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xi32> -> !vdir.tile<4x64xi32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'sum_rows': partials must be f32, got 4x64xi32
  %u = vdir.compute sum_rows(%t) : (!vdir.tile<4x64xi32>) -> !vdir.tile<1x64xi32>
  %s = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xi32>, !vdir.buffer<1x64xi32>
}

// -----

// The combined result is f32 or bf16, never i32.
vdir.program @sum_rows_to_i32(%a: !vdir.buffer<4x64xf32>, %y: !vdir.buffer<1x64xi32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x64xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'sum_rows' produces a 1x64xf32 tile here, but the result is declared 1x64xi32
  %u = vdir.compute sum_rows(%t) : (!vdir.tile<4x64xf32>) -> !vdir.tile<1x64xi32>
  %s = vdir.store %u, %y[0, 0] : !vdir.tile<1x64xi32>, !vdir.buffer<1x64xi32>
}
