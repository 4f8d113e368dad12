// RUN: vdir-opt %s --verify-diagnostics --split-input-file

// A region has two offsets (row, column), constants non-negative (the custom
// form cannot spell a negative one); in the generic form the sentinel entries
// of static_offsets must match the dynamic offset operands.

vdir.program @three(%a: !vdir.buffer<4x8xbf16>) {
  // expected-error @+1 {{load needs 2 offsets (row, column), got 3}}
  %t = vdir.load %a[0, 0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xbf16>
}

// -----

vdir.program @one(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // expected-error @+1 {{store needs 2 offsets (row, column), got 1}}
  %s = vdir.store %t, %a[0] : !vdir.tile<4x8xbf16>, !vdir.buffer<4x8xbf16>
}

// -----

vdir.program @disagree(%a: !vdir.buffer<4x8xbf16>) {
  vdir.repeat %i = 0 to 4 {
    // expected-error @+1 {{load: offsets and dynamic offset operands disagree}}
    %t = "vdir.load"(%a, %i) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (!vdir.buffer<4x8xbf16>, index) -> !vdir.tile<1x8xbf16>
    %s = vdir.store %t, %a[%i, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<4x8xbf16>
  }
}

// -----

vdir.program @negative(%a: !vdir.buffer<4x8xbf16>) {
  // expected-error @+1 {{load: row offset -1 is negative}}
  %t = "vdir.load"(%a) <{static_offsets = array<i64: -1, 0>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<4x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<4x8xbf16>
}
