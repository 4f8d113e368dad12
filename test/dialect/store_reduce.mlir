// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A reducing store (`reduce add`) adds its f32 tile into the region instead
// of overwriting it. The reduction follows the region, before the engine;
// without it a store is a plain one (the property is absent).

vdir.program @store_reduce(%a: !vdir.buffer<8x64xf32>, %y: !vdir.buffer<8x64xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<8x64xf32> -> !vdir.tile<8x32xf32>
  %first = vdir.store %t, %y[0, 32] reduce add : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
  %u = vdir.load %a[0, 32] : !vdir.buffer<8x64xf32> -> !vdir.tile<8x32xf32>
  %second = vdir.store %u, %y[0, 32] reduce add on store flow 1 after %first : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
  %plain = vdir.store %u, %y[0, 0] : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
}

// CHECK-LABEL: vdir.program @store_reduce(%a: !vdir.buffer<8x64xf32>, %y: !vdir.buffer<8x64xf32>)
// CHECK:       %first = vdir.store %t, %y[0, 32] reduce add on store : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
// CHECK:       %second = vdir.store %u, %y[0, 32] reduce add on store flow 1 after %first : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>
// CHECK:       %plain = vdir.store %u, %y[0, 0] on store : !vdir.tile<8x32xf32>, !vdir.buffer<8x64xf32>

// GENERIC:     %first = "vdir.store"(%t, %y) <{static_offsets = array<i64: 0, 32>, reduce = #vdir.reduce<add>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}>
// GENERIC:     %plain = "vdir.store"(%u, %y) <{static_offsets = array<i64: 0, 0>, engine = #vdir.engine<store>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}>
