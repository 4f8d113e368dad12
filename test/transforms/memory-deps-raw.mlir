// RUN: vdir-opt %S/Inputs/memdeps.mlir -p 'vdir-place{num-sms=1}' | filecheck %s

// Read-after-write through global memory: %b reads what the first store to
// @y wrote, so the analysis makes it wait for that store (vdir.after names
// its id), although no token connects them in the source.

// CHECK: vdir.store %a, %y[0, 0] on store {vdir.id = [[S1:[0-9]+]] : i64
// CHECK: %b = vdir.load %y[0, 0] on load {{{.*}}vdir.after = [array<i64: [[S1]]>]}
