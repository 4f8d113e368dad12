// RUN: vdir-opt %S/Inputs/memdeps.mlir -p 'vdir-place{num-sms=1}' | filecheck %s

// Read-after-write through global memory: %b reads what the first store to
// @y wrote, so the analysis makes it wait for that store (an after group of
// its vdir.sched names the store's id), although no token connects them in
// the source.

// CHECK: vdir.store %a, %y[0, 0] on store {vdir.sched = #vdir.sched<id = [[S1:[0-9]+]],
// CHECK: %b = vdir.load %y[0, 0] on load {{{.*}}after = {{\[\[}}[[S1]]]]>}
