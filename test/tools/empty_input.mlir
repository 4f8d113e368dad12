// An input with no operations (empty, or only comments) is an empty module, as for mlir-opt.

// RUN: vdir-opt %s | filecheck %s
// RUN: printf '' | vdir-opt - | filecheck %s
// RUN: printf '' | vdir-opt - -p vdir-fuse | filecheck %s

// CHECK: builtin.module {
// CHECK-NEXT: }
