// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=1}' | filecheck %s --check-prefix=ONE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=0}' | filecheck %s --check-prefix=NONE
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=-1}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=4300}' | filecheck %s --check-prefix=BUDGET
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=4200}' | filecheck %s --check-prefix=TIGHT
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=-1}' 2>&1 | filecheck %s --check-prefix=BAD-BUDGET
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule' | filecheck %s --check-prefix=ONEQUEUE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule{hoist-budget=4300}' | filecheck %s --check-prefix=ONEQUEUE-BUDGET

// The reload of %act waits for both SMs' stores (a global counter). Rather
// than idle at that barrier, the SM first streams the next independent
// loads — the down-projection weights and the residual — which the scheduler
// moves ahead of it (the hoist of their vdir.sched records the move; they take
// the waiting load's place in program order: seq 15, before %av's hoist 0).
//
// vdir-place puts the independent loads on the stream engine and leaves %av,
// which waits, alone on the load engine, so the move is across the SM's two
// load queues: hoisting reads them merged as one, in (seq, hoist) order, and
// each queue keeps its share of that order (%av is position 0 of the load
// queue, %wdt and %res positions 4 and 5 of the stream queue, after %x, %gt,
// %wgt and %wut). The merged order is the one a single queue gets
// (ONEQUEUE, stream-loads=false): there %av's position 6 comes after theirs.

// CHECK:      %x = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0>}
// CHECK:      %wut = vdir.load %wu[0, 0] on stream {vdir.sched = #vdir.sched<id = 5, sm = 0, pos = 3{{(, label = "[^"]*")?}}>}
// CHECK:      %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = 9, seq = 15, sm = 0, pos = 0,
// CHECK-NEXT: %wdt = vdir.load %wd[0, 0] on stream {vdir.sched = #vdir.sched<id = 10, seq = 15, hoist = -2, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// CHECK:      %res = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 12, seq = 15, hoist = -1, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}

// ONEQUEUE:      %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = 9, seq = 15, sm = 0, pos = 6,
// ONEQUEUE-NEXT: %wdt = vdir.load %wd[0, 0] on load {vdir.sched = #vdir.sched<id = 10, seq = 15, hoist = -2, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// ONEQUEUE:      %res = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 12, seq = 15, hoist = -1, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NOT:  on stream

// With prefetch=1 only %wdt moves ahead; %res keeps its place (seq 18).
// ONE:        %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 0,
// ONE-NEXT:   %wdt = vdir.load %wd[0, 0] on stream {{.*}}seq = 15, hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// ONE:        %res = vdir.load %h[0, 0] on stream {{.*}}seq = 18, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}

// With prefetch=0 nothing moves: %wdt stays after %av (seq 16).
// NONE:       %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 0,
// NONE-NEXT:  %wdt = vdir.load %wd[0, 0] on stream {{.*}}seq = 16, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// NONE-NOT:   hoist =

// BAD: error: vdir-schedule: option 'prefetch' must be at least 0, got -1

// hoist-budget: a load is moved ahead only where SM 0's live tiles (counted
// as vdir-alloc-smem counts them, from producer to last use, in the merged
// order of the SM's queues) stay within the budget. At the wait, %wdt's 4096
// bytes fit beside what is live at 4300 bytes, but the residual row then does
// not; at 4200 neither is moved. One load queue or two, the same loads move.

// BUDGET:      %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 0,
// BUDGET-NEXT: %wdt = vdir.load %wd[0, 0] on stream {{.*}}seq = 15, hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// BUDGET:      %res = vdir.load %h[0, 0] on stream {{.*}}seq = 18, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}

// ONEQUEUE-BUDGET:      %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 5,
// ONEQUEUE-BUDGET-NEXT: %wdt = vdir.load %wd[0, 0] on load {{.*}}seq = 15, hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// ONEQUEUE-BUDGET:      %res = vdir.load %h[0, 0] on load {{.*}}seq = 18, sm = 0, pos = 6{{(, label = "[^"]*")?}}>}

// TIGHT:       %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 0,
// TIGHT-NEXT:  %wdt = vdir.load %wd[0, 0] on stream {{.*}}seq = 16, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// TIGHT-NOT:   hoist =

// BAD-BUDGET: error: vdir-schedule: option 'hoist-budget' must be at least 0, got -1
