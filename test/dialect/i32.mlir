// RUN: %roundtrip
// RUN: vdir-opt %s | filecheck %s
// RUN: vdir-opt %s -p vdir-pipeline | filecheck %s --check-prefix=ENCODED

// i32 buffers and tiles (token ids, positions, indices) are loaded and
// stored like bf16 and f32 ones: a gather of rows. A row of 4 i32 elements
// is 16 bytes, the narrowest tile row a bulk copy moves.

vdir.program @gather(%ids: !vdir.buffer<64x4xi32>, %out: !vdir.buffer<2x4xi32>) {
  %a = vdir.load %ids[17, 0] : !vdir.buffer<64x4xi32> -> !vdir.tile<1x4xi32>
  %b = vdir.load %ids[3, 0] : !vdir.buffer<64x4xi32> -> !vdir.tile<1x4xi32>
  %sa = vdir.store %a, %out[0, 0] : !vdir.tile<1x4xi32>, !vdir.buffer<2x4xi32>
  %sb = vdir.store %b, %out[1, 0] : !vdir.tile<1x4xi32>, !vdir.buffer<2x4xi32>
}

// CHECK-LABEL: vdir.program @gather(%ids: !vdir.buffer<64x4xi32>, %out: !vdir.buffer<2x4xi32>)
// CHECK:       %a = vdir.load %ids[17, 0] on load : !vdir.buffer<64x4xi32> -> !vdir.tile<1x4xi32>
// CHECK:       vdir.store %b, %out[1, 0] on store : !vdir.tile<1x4xi32>, !vdir.buffer<2x4xi32>

// ENCODED: vdir.encoded_program @gather {{{.*}}buffers = ["ids:64x4:i32:in", "out:2x4:i32:out"]
