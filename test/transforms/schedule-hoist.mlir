// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=1}' | filecheck %s --check-prefix=ONE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=0}' | filecheck %s --check-prefix=NONE
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=-1}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=4300}' | filecheck %s --check-prefix=BUDGET
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=4200}' | filecheck %s --check-prefix=TIGHT
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=-1}' 2>&1 | filecheck %s --check-prefix=BAD-BUDGET

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

// hoist-budget: a load is moved ahead only where SM 0's live tiles (counted
// as vdir-alloc-smem counts them, from producer to last use) stay within the
// budget. At the wait, %wdt's 4096 bytes fit beside what is live at 4300
// bytes, but the residual row then does not; at 4200 neither is moved.

// BUDGET:      %av = vdir.load %act[0, 0] {{.*}}pos = 5,
// BUDGET-NEXT: %wdt = vdir.load %wd[0, 0] {{.*}}hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// BUDGET:      %res = vdir.load %h[0, 0] {{.*}}seq = 18, sm = 0, pos = 6{{(, label = "[^"]*")?}}>}

// TIGHT:       %av = vdir.load %act[0, 0] {{.*}}pos = 4,
// TIGHT-NOT:   hoist =

// BAD-BUDGET: error: vdir-schedule: option 'hoist-budget' must be at least 0, got -1
