// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=1}' | filecheck %s --check-prefix=ONE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=0}' | filecheck %s --check-prefix=NONE
// RUN: not vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=-1}' 2>&1 | filecheck %s --check-prefix=BAD

// The reload of %act waits for both SMs' stores (a global counter). Rather
// than idle at that barrier, the load engine first streams the next
// independent loads — the down-projection weights and the residual — which
// the scheduler moves ahead of it (vdir.hoist records the move; they take
// the waiting load's place in program order).

// CHECK:      %av = vdir.load %act[0, 0] on load {vdir.id = 9 : i64, vdir.seq = 15 : i64, vdir.sm = 0 : i64, vdir.pos = 6 : i64,
// CHECK-NEXT: %wdt = vdir.load %wd[0, 0] on load {vdir.id = 10 : i64, vdir.seq = 15 : i64, vdir.hoist = -2 : i64, vdir.sm = 0 : i64, vdir.pos = 4 : i64}
// CHECK:      %res = vdir.load %h[0, 0] on load {vdir.id = 12 : i64, vdir.seq = 15 : i64, vdir.hoist = -1 : i64, vdir.sm = 0 : i64, vdir.pos = 5 : i64}

// ONE:        %av = vdir.load %act[0, 0] {{.*}}vdir.pos = 5 : i64
// ONE-NEXT:   %wdt = vdir.load %wd[0, 0] {{.*}}vdir.hoist = -1 : i64, vdir.sm = 0 : i64, vdir.pos = 4 : i64}
// ONE:        %res = vdir.load %h[0, 0] {{.*}}vdir.pos = 6 : i64}

// NONE:       %av = vdir.load %act[0, 0] {{.*}}vdir.pos = 4 : i64
// NONE-NOT:   vdir.hoist

// BAD: error: vdir-schedule: prefetch must be at least 0, got -1
