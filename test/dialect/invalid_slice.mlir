// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The slice family: columns start .. start + width - 1 of a bf16 tile, every
// row, copied exactly; the result is R x width, and the columns must lie
// within the operand's.

vdir.program @slice_ok(%a: !vdir.buffer<2x64xbf16>, %o: !vdir.buffer<2x16xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<2x64xbf16>
  // CHECK-LABEL: vdir.program @slice_ok
  // CHECK: vdir.compute slice(%{{.*}}) {start = 48 : i64, width = 16 : i64} on compute : (!vdir.tile<2x64xbf16>) -> !vdir.tile<2x16xbf16>
  %y = vdir.compute slice(%x) {start = 48 : i64, width = 16 : i64} : (!vdir.tile<2x64xbf16>) -> !vdir.tile<2x16xbf16>
  %s = vdir.store %y, %o[0, 0] : !vdir.tile<2x16xbf16>, !vdir.buffer<2x16xbf16>
}

// -----

vdir.program @past_the_end(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x16xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'slice': columns 56 to 71 are not within the 64 columns of 1x64xbf16
  %y = vdir.compute slice(%x) {start = 56 : i64, width = 16 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %y, %o[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}

// -----

vdir.program @wrong_result(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x16xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'slice' produces a 1x8xbf16 tile here, but the result is declared 1x16xbf16
  %y = vdir.compute slice(%x) {start = 0 : i64, width = 8 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %y, %o[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}

// -----

vdir.program @f32_operand(%a: !vdir.buffer<1x64xf32>, %o: !vdir.buffer<1x16xf32>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xf32> -> !vdir.tile<1x64xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'slice': x must be bf16, got 1x64xf32
  %y = vdir.compute slice(%x) {start = 0 : i64, width = 16 : i64} : (!vdir.tile<1x64xf32>) -> !vdir.tile<1x16xf32>
  %s = vdir.store %y, %o[0, 0] : !vdir.tile<1x16xf32>, !vdir.buffer<1x16xf32>
}

// -----

vdir.program @no_width(%a: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x16xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'slice' needs parameter 'width'
  %y = vdir.compute slice(%x) {start = 0 : i64} : (!vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %y, %o[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
