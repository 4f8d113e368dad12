// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=1}' | filecheck %s --check-prefix=ONE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=0}' | filecheck %s --check-prefix=NONE
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=-1}' 2>&1 | filecheck %s --check-prefix=BAD

// The reload of %act waits for both SMs' stores (a global counter). Rather
// than idle at that barrier, the load engine first streams the next
// independent loads — the down-projection weights and the residual — which
// the scheduler moves ahead of it (the hoist of their vdir.sched records the move; they take
// the waiting load's place in program order).

// CHECK:      %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = 9, seq = 15, sm = 0, pos = 6,
// CHECK-NEXT: %wdt = vdir.load %wd[0, 0] on load {vdir.sched = #vdir.sched<id = 10, seq = 15, hoist = -2, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// CHECK:      %res = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 12, seq = 15, hoist = -1, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}

// ONE:        %av = vdir.load %act[0, 0] {{.*}}pos = 5,
// ONE-NEXT:   %wdt = vdir.load %wd[0, 0] {{.*}}hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// ONE:        %res = vdir.load %h[0, 0] {{.*}}pos = 6{{(, label = "[^"]*")?}}>}

// NONE:       %av = vdir.load %act[0, 0] {{.*}}pos = 4,
// NONE-NOT:   hoist =

// BAD: error: vdir-schedule: option 'prefetch' must be at least 0, got -1
