// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The declared result type must be what the family produces (gemv may also
// declare an f32 partial sum, add and sum_rows an f32 or a bf16 result).

vdir.program @shape(%w: !vdir.buffer<8x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv' produces a 1x8xbf16 tile here, but the result is declared 1x16xbf16
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}

// -----

vdir.program @dtype(%a: !vdir.buffer<1x8xbf16>, %b: !vdir.buffer<1x8xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'silu_mul' produces a 1x8xbf16 tile here, but the result is declared 1x8xf32
  %u = vdir.compute silu_mul(%t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xf32>
  %s = vdir.store %u, %b[0, 0] : !vdir.tile<1x8xf32>, !vdir.buffer<1x8xf32>
}

// -----

vdir.program @not_a_tile(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: vdir.compute: !vdir.token should be of base attribute vdir.tile
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x8xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.token
}

// -----

// sum_rows reduces over the rows: its result is one row.
vdir.program @sum_rows_shape(%a: !vdir.buffer<4x64xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x64xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'sum_rows' produces a 1x64xf32 tile here, but the result is declared 4x64xf32
  %u = vdir.compute sum_rows(%t) : (!vdir.tile<4x64xf32>) -> !vdir.tile<4x64xf32>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<4x64xf32>, !vdir.buffer<4x64xf32>
}
