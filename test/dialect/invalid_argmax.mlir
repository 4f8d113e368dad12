// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The argmax families: argmax_partial takes a 1xN bf16 or f32 row and an
// integer base with base + N <= 2^24 (the index travels as an f32, exact up
// to 2^24); argmax_final takes Sx4 f32 rows of argmax_partial results and
// gives a 1x4 i32 tile.

vdir.program @partial_not_a_row(%a: !vdir.buffer<2x64xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<2x64xf32> -> !vdir.tile<2x64xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial': x must be a 1xN tile, got 2x64xf32
  %b = vdir.compute argmax_partial(%x) {base = 0 : i64} : (!vdir.tile<2x64xf32>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %b, %a[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<2x64xf32>
}

// -----

vdir.program @partial_i32(%a: !vdir.buffer<1x64xi32>, %o: !vdir.buffer<1x4xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xi32> -> !vdir.tile<1x64xi32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial': x must be bf16 or f32, got 1x64xi32
  %b = vdir.compute argmax_partial(%x) {base = 0 : i64} : (!vdir.tile<1x64xi32>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %b, %o[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}

// -----

vdir.program @partial_no_base(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x4xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial' needs parameter 'base'
  %b = vdir.compute argmax_partial(%x) : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %b, %o[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}

// -----

vdir.program @partial_negative_base(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x4xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial': parameter 'base' = -64 is outside its range 0 to 16777216
  %b = vdir.compute argmax_partial(%x) {base = -64 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %b, %o[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}

// -----

vdir.program @partial_fractional_base(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x4xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial': parameter 'base' must be an integer, got 0.5
  %b = vdir.compute argmax_partial(%x) {base = 0.5 : f32} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %b, %o[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}

// -----

vdir.program @partial_index_not_exact(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x4xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial': base + N = 16777200 + 64 exceeds 2^24 = 16777216 (the index travels as an f32, exact only up to 2^24)
  %b = vdir.compute argmax_partial(%x) {base = 16777200 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %b, %o[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}

// -----

vdir.program @partial_result(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x4xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_partial' produces a 1x4xf32 tile here, but the result is declared 1x8xbf16
  %b = vdir.compute argmax_partial(%x) {base = 0 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %b, %o[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x4xbf16>
}

// -----

vdir.program @final_bf16(%a: !vdir.buffer<8x8xbf16>, %o: !vdir.buffer<1x4xi32>) {
  %p = vdir.load %a[0, 0] : !vdir.buffer<8x8xbf16> -> !vdir.tile<8x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_final': partials must be f32, got 8x8xbf16
  %t = vdir.compute argmax_final(%p) {stride = 0 : i64} : (!vdir.tile<8x8xbf16>) -> !vdir.tile<1x4xi32>
  %s = vdir.store %t, %o[0, 0] : !vdir.tile<1x4xi32>, !vdir.buffer<1x4xi32>
}

// -----

vdir.program @final_width(%a: !vdir.buffer<8x8xf32>, %o: !vdir.buffer<1x4xi32>) {
  %p = vdir.load %a[0, 0] : !vdir.buffer<8x8xf32> -> !vdir.tile<8x8xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_final': partials must be Sx4 (one argmax_partial result per row), got 8x8xf32
  %t = vdir.compute argmax_final(%p) {stride = 0 : i64} : (!vdir.tile<8x8xf32>) -> !vdir.tile<1x4xi32>
  %s = vdir.store %t, %o[0, 0] : !vdir.tile<1x4xi32>, !vdir.buffer<1x4xi32>
}

// -----

vdir.program @final_result(%a: !vdir.buffer<8x4xf32>, %o: !vdir.buffer<1x4xf32>) {
  %p = vdir.load %a[0, 0] : !vdir.buffer<8x4xf32> -> !vdir.tile<8x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'argmax_final' produces a 1x4xi32 tile here, but the result is declared 1x4xf32
  %t = vdir.compute argmax_final(%p) {stride = 0 : i64} : (!vdir.tile<8x4xf32>) -> !vdir.tile<1x4xf32>
  %s = vdir.store %t, %o[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}
