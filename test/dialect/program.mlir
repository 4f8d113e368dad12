// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// vdir.program: a symbol whose arguments are global buffers; `target` names
// the target description. A module may hold several programs; a program may
// be empty.

vdir.program @empty() {
}

vdir.program @copy(%src: !vdir.buffer<4x16xf32>, %dst: !vdir.buffer<4x16xf32>) attributes {target = "h100", owner = "tests"} {
  %t = vdir.load %src[0, 0] : !vdir.buffer<4x16xf32> -> !vdir.tile<4x16xf32>
  %s = vdir.store %t, %dst[0, 0] : !vdir.tile<4x16xf32>, !vdir.buffer<4x16xf32>
}

// CHECK:      vdir.program @empty() {
// CHECK-NEXT: }
// CHECK:      vdir.program @copy(%src: !vdir.buffer<4x16xf32>, %dst: !vdir.buffer<4x16xf32>) attributes {target = "h100", owner = "tests"} {

// GENERIC:    "vdir.program"() <{sym_name = "empty", arg_names = []}> ({
// GENERIC:    "vdir.program"() <{sym_name = "copy", target = "h100", arg_names = ["src", "dst"]}> ({
// GENERIC-NEXT: ^bb{{[0-9]+}}(%src: !vdir.buffer<4x16xf32>, %dst: !vdir.buffer<4x16xf32>):
// GENERIC:    }) {owner = "tests"} : () -> ()
