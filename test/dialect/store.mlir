// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A store copies a tile to a buffer region and yields a token. It runs on the
// store engine by default and may wait for other tokens (`after`).

vdir.program @store(%a: !vdir.buffer<8x64xf32>, %b: !vdir.buffer<8x64xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<8x64xf32> -> !vdir.tile<8x32xf32>
  %first = vdir.store %t, %b[0, 32] : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
  %u = vdir.load %a[0, 32] : !vdir.buffer<8x64xf32> -> !vdir.tile<8x32xf32>
  %second = vdir.store %u, %b[0, 0] on store flow 1 after %first : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
}

// CHECK-LABEL: vdir.program @store(%a: !vdir.buffer<8x64xf32>, %b: !vdir.buffer<8x64xf32>)
// CHECK:       %first = vdir.store %t, %b[0, 32] on store : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
// CHECK:       %second = vdir.store %u, %b[0, 0] on store flow 1 after %first : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>

// GENERIC:     %first = "vdir.store"(%t, %b) <{static_offsets = array<i64: 0, 32>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (!vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>) -> !vdir.token
// GENERIC:     %second = "vdir.store"(%u, %b, %first) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, flow = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>}> : (!vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>, !vdir.token) -> !vdir.token
