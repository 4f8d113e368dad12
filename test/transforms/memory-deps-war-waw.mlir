// RUN: vdir-opt %S/Inputs/memdeps.mlir -p 'vdir-place{num-sms=1}' | filecheck %s

// The second store to @y must follow the first (write-after-write) and the
// load of @y (write-after-read): one group of both. The store to @x must
// follow the load of @x that read the old value (write-after-read). %a waits
// on nothing and runs on the stream engine; %b waits on the first store
// (read-after-write) and stays on the load engine.

// CHECK: %a = vdir.load %x[0, 0] on stream {vdir.sched = #vdir.sched<id = [[LA:[0-9]+]],
// CHECK: vdir.store %a, %y[0, 0] on store {vdir.sched = #vdir.sched<id = [[S1:[0-9]+]],
// CHECK: %b = vdir.load %y[0, 0] on load {vdir.sched = #vdir.sched<id = [[LB:[0-9]+]],
// CHECK: vdir.store %c, %y[0, 0] on store {{{.*}}after = {{\[\[}}[[S1]], [[LB]]]]>}
// CHECK: vdir.store %c, %x[0, 0] on store {{{.*}}after = {{\[\[}}[[LA]]]]>}
