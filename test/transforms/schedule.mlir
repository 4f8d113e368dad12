// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s

// Each (SM, engine) queue is numbered in program order: loads 0..6 on the
// load engine, computes 0..5 on the compute engine, stores 0..1 on the store
// engine, independently per SM.

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    vdir.stage = #vdir.stage<scheduled>
// CHECK:       %x = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %gt = vdir.load %g[0, 0] on load {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 1{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %xn = vdir.compute rmsnorm({{.*}}sm = 0, pos = 0{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %wgt = vdir.load {{.*}}pos = 2{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %gate = vdir.compute gemv({{.*}}pos = 1{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %wut = vdir.load {{.*}}pos = 3{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %up = vdir.compute gemv({{.*}}pos = 2{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %a = vdir.compute silu_mul({{.*}}pos = 3{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  vdir.store %a, %act[0, 0] on store {{.*}}pos = 0{{(, label = "[^"]*")?}}>}
// CHECK:       vdir.store {{.*}}%out[0, 0] on store {{.*}}sm = 0, pos = 1{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %x_1 = vdir.load %h[0, 0] on load {{.*}}sm = 1, pos = 0{{(, label = "[^"]*")?}}>}
