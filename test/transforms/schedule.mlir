// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s

// Each (SM, engine) queue is numbered in program order: loads 0..6 on the
// load engine, computes 0..5 on the compute engine, stores 0..1 on the store
// engine, independently per SM.

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    vdir.stage = "scheduled"
// CHECK:       %x = vdir.load %h[0, 0] on load {vdir.id = 0 : i64, vdir.sm = 0 : i64, vdir.pos = 0 : i64}
// CHECK-NEXT:  %gt = vdir.load %g[0, 0] on load {vdir.id = 1 : i64, vdir.sm = 0 : i64, vdir.pos = 1 : i64}
// CHECK-NEXT:  %xn = vdir.compute rmsnorm({{.*}}vdir.sm = 0 : i64, vdir.pos = 0 : i64}
// CHECK-NEXT:  %wgt = vdir.load {{.*}}vdir.pos = 2 : i64}
// CHECK-NEXT:  %gate = vdir.compute gemv({{.*}}vdir.pos = 1 : i64}
// CHECK-NEXT:  %wut = vdir.load {{.*}}vdir.pos = 3 : i64}
// CHECK-NEXT:  %up = vdir.compute gemv({{.*}}vdir.pos = 2 : i64}
// CHECK-NEXT:  %a = vdir.compute silu_mul({{.*}}vdir.pos = 3 : i64}
// CHECK-NEXT:  vdir.store %a, %act[0, 0] on store {{.*}}vdir.pos = 0 : i64}
// CHECK:       vdir.store {{.*}}%out[0, 0] on store {{.*}}vdir.sm = 0 : i64, vdir.pos = 1 : i64}
// CHECK-NEXT:  %x_1 = vdir.load %h[0, 0] on load {{.*}}vdir.sm = 1 : i64, vdir.pos = 0 : i64}
