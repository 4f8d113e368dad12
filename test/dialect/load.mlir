// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A load copies a buffer region into a new tile; offsets are constants or
// index values, the engine defaults to `load`.

vdir.program @load(%w: !vdir.buffer<64x256xbf16>, %o: !vdir.buffer<64x256xbf16>) {
  %a = vdir.load %w[0, 128] : !vdir.buffer<64x256xbf16> -> !vdir.tile<16x128xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %b = vdir.load %w[%r, 0] on load flow 3 : !vdir.buffer<64x256xbf16> -> !vdir.tile<16x128xbf16>
    %s = vdir.store %b, %o[%r, 0] : !vdir.tile<16x128xbf16>, !vdir.buffer<64x256xbf16>
  }
  %s2 = vdir.store %a, %o[0, 128] : !vdir.tile<16x128xbf16>, !vdir.buffer<64x256xbf16>
}

// CHECK-LABEL: vdir.program @load
// CHECK:       %a = vdir.load %w[0, 128] on load : !vdir.buffer<64x256xbf16> -> !vdir.tile<16x128xbf16>
// CHECK:       %b = vdir.load %w[%r, 0] on load flow 3 : !vdir.buffer<64x256xbf16> -> !vdir.tile<16x128xbf16>

// GENERIC:      %a = "vdir.load"(%w) <{static_offsets = array<i64: 0, 128>, engine = #vdir.engine<load>, operandSegmentSizes = array<i32: 1, 0, 0, 0>}> : (!vdir.buffer<64x256xbf16>) -> !vdir.tile<16x128xbf16>
// GENERIC:      %b = "vdir.load"(%w, %r) <{static_offsets = array<i64: -9223372036854775808, 0>, engine = #vdir.engine<load>, flow = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (!vdir.buffer<64x256xbf16>, index) -> !vdir.tile<16x128xbf16>
