// With --split-input-file each chunk is checked separately; verifier errors
// keep the line numbers of the whole file, and a good chunk prints as usual.
// Without a diagnostics flag every chunk still runs (as with mlir-opt): each
// error goes to stderr, the good chunks' output to stdout, and the exit
// status is 1.

// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s
// RUN: not vdir-opt %s --split-input-file 2> %t.err > %t.out
// RUN: filecheck %s --check-prefix=ERR < %t.err
// RUN: filecheck %s --check-prefix=OUT < %t.out

vdir.program @good(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @bad(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 8] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @bad_again(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
}

// CHECK:      vdir.program @good
// CHECK:      // -----
// CHECK-NEXT: {{.*}}split_input_locations.mlir:21:3: error: store: region columns [8, 16) are out of the buffer's bounds [0, 8)
// CHECK-NEXT: // -----
// CHECK-NEXT: {{.*}}split_input_locations.mlir:27:3: error: tile %t is produced but never used

// ERR:      {{.*}}split_input_locations.mlir:21:3: error: store: region columns
// ERR-NEXT: {{.*}}split_input_locations.mlir:27:3: error: tile %t is produced but never used
// ERR-NOT:  {{.}}

// OUT:      vdir.program @good
// OUT:      // -----
// OUT-NEXT: // -----
// OUT-NOT:  error
