// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2}' | filecheck %s

// The gate and up gemvs of one row block, their silu_mul and its store form one
// cluster: the intermediate tiles never leave the SM. The rmsnorm (cheap, fed
// only by loads) is recomputed on each SM; the reload of %act after the
// first phase is copied to both SMs and waits for both stores to %act.

// CHECK-LABEL: vdir.program @mlp
// CHECK:       %[[XN0:.*]] = vdir.compute rmsnorm({{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:       %[[G0:.*]] = vdir.compute gemv(%{{.*}}, %[[XN0]]) on compute {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:       %[[U0:.*]] = vdir.compute gemv(%{{.*}}, %[[XN0]]) on compute {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:       %[[A0:.*]] = vdir.compute silu_mul(%[[G0]], %[[U0]]) {{.*}}sm = 0{{(, label = "[^"]*")?}}>
// CHECK:       vdir.store %[[A0]], %act[0, 0] on store {vdir.sched = #vdir.sched<id = [[S0:[0-9]+]], sm = 0{{(, label = "[^"]*")?}}>}
// CHECK:       vdir.load %act[0, 0] on load {{{.*}}sm = 0{{(, label = "[^"]*")?}}, after = {{\[\[}}[[S0]], [[S1:[0-9]+]]]]>}
// CHECK:       %[[XN1:.*]] = vdir.compute rmsnorm({{.*}}sm = 1{{(, label = "[^"]*")?}}>
// CHECK:       vdir.compute silu_mul({{.*}}sm = 1{{(, label = "[^"]*")?}}>
// CHECK:       vdir.store %{{.*}}, %act[0, 32] on store {vdir.sched = #vdir.sched<id = [[S1]], seq = {{[0-9]+}}, sm = 1{{(, label = "[^"]*")?}}>}
// CHECK:       vdir.load %act[0, 0] on load {{{.*}}sm = 1{{(, label = "[^"]*")?}}, after = {{\[\[}}[[S0]], [[S1]]]]>}
