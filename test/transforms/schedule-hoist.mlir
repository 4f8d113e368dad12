// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule{prefetch=1}' | filecheck %s --check-prefix=ONE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule{prefetch=0}' | filecheck %s --check-prefix=NONE
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=-1}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule{hoist-budget=4300}' | filecheck %s --check-prefix=BUDGET
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule{hoist-budget=4200}' | filecheck %s --check-prefix=TIGHT
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=-1}' 2>&1 | filecheck %s --check-prefix=BAD-BUDGET
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s --check-prefix=STREAM
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{hoist-budget=4300}' | filecheck %s --check-prefix=STREAM

// With one load queue (stream-loads=false), the reload of %act waits for
// both SMs' stores (a global counter). Rather than idle at that barrier, the
// SM first streams the next independent loads of the queue — the
// down-projection weights and the residual — which the scheduler moves ahead
// of it (the hoist of their vdir.sched records the move; they take the
// waiting load's place in program order: seq 15, before %av's hoist 0).

// CHECK:      %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = 9, seq = 15, sm = 0, pos = 6,
// CHECK-NEXT: %wdt = vdir.load %wd[0, 0] on load {vdir.sched = #vdir.sched<id = 10, seq = 15, hoist = -2, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// CHECK:      %res = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 12, seq = 15, hoist = -1, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// CHECK-NOT:  on stream

// With prefetch=1 only %wdt moves ahead; %res keeps its place (seq 18).
// ONE:        %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 5,
// ONE-NEXT:   %wdt = vdir.load %wd[0, 0] on load {{.*}}seq = 15, hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// ONE:        %res = vdir.load %h[0, 0] on load {{.*}}seq = 18, sm = 0, pos = 6{{(, label = "[^"]*")?}}>}

// With prefetch=0 nothing moves: %wdt stays after %av (seq 16).
// NONE:       %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 4,
// NONE-NEXT:  %wdt = vdir.load %wd[0, 0] on load {{.*}}seq = 16, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// NONE-NOT:   hoist =

// BAD: error: vdir-schedule: option 'prefetch' must be at least 0, got -1

// hoist-budget: a load is moved ahead only where SM 0's live tiles (counted
// as vdir-alloc-smem counts them, from producer to last use) stay within the
// budget. At the wait, %wdt's 4096 bytes fit beside what is live at 4300
// bytes, but the residual row then does not; at 4200 neither is moved.

// BUDGET:      %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 5,
// BUDGET-NEXT: %wdt = vdir.load %wd[0, 0] on load {{.*}}seq = 15, hoist = -1, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// BUDGET:      %res = vdir.load %h[0, 0] on load {{.*}}seq = 18, sm = 0, pos = 6{{(, label = "[^"]*")?}}>}

// TIGHT:       %av = vdir.load %act[0, 0] on load {{.*}}seq = 15, sm = 0, pos = 4,
// TIGHT-NEXT:  %wdt = vdir.load %wd[0, 0] on load {{.*}}seq = 16, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// TIGHT-NOT:   hoist =

// BAD-BUDGET: error: vdir-schedule: option 'hoist-budget' must be at least 0, got -1

// With the stream engine (the default placement) the independent loads have
// a queue of their own and %av, which waits, is alone on the load engine: no
// queue holds both, so nothing is hoisted, with or without a budget. The
// stream engine runs ahead of the wait by itself; its queue is in program
// order (%x, ..., %wut, then %wdt and %res after the wait's place).
// STREAM:      %x = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0>}
// STREAM:      %wut = vdir.load %wu[0, 0] on stream {vdir.sched = #vdir.sched<id = 5, sm = 0, pos = 3{{(, label = "[^"]*")?}}>}
// STREAM:      %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = 9, seq = 15, sm = 0, pos = 0,
// STREAM-NEXT: %wdt = vdir.load %wd[0, 0] on stream {vdir.sched = #vdir.sched<id = 10, seq = 16, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// STREAM:      %res = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 12, seq = 18, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// STREAM-NOT:  hoist =
