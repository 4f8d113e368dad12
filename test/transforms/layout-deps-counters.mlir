// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s

// The reload of %act on each SM waits for the stores of both SMs: the group
// becomes global counter 0, released once by each store; each copy of the
// load waits until it reaches 2 (times the launch epoch).

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    counter_counts = [2],
// CHECK:       vdir.store %a, %act[0, 0] on store {{.*}}release = [0]>}
// CHECK:       %av = vdir.load %act[0, 0] {{.*}}sm = 0,{{.*}}wait_counters = [0 : 2],
// CHECK:       vdir.store %{{.*}}, %act[0, 32] on store {{.*}}sm = 1,{{.*}}release = [0]>}
// CHECK:       vdir.load %act[0, 0] {{.*}}sm = 1,{{.*}}wait_counters = [0 : 2],
