// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2}' | filecheck %s

// The gate and up gemvs of one row block, their silu_mul and its store form one
// cluster: the intermediate tiles never leave the SM. The rmsnorm (cheap, fed
// only by loads) is recomputed on each SM; the reload of %act after the
// first phase is copied to both SMs and waits for both stores to %act.

// CHECK-LABEL: vdir.program @mlp
// CHECK:       %[[XN0:.*]] = vdir.compute rmsnorm({{.*}}vdir.sm = 0 : i64
// CHECK:       %[[G0:.*]] = vdir.compute gemv(%{{.*}}, %[[XN0]]) on compute {{.*}}vdir.sm = 0 : i64
// CHECK:       %[[U0:.*]] = vdir.compute gemv(%{{.*}}, %[[XN0]]) on compute {{.*}}vdir.sm = 0 : i64
// CHECK:       %[[A0:.*]] = vdir.compute silu_mul(%[[G0]], %[[U0]]) {{.*}}vdir.sm = 0 : i64
// CHECK:       vdir.store %[[A0]], %act[0, 0] on store {vdir.id = [[S0:[0-9]+]] : i64, vdir.sm = 0 : i64}
// CHECK:       vdir.load %act[0, 0] on load {{{.*}}vdir.sm = 0 : i64, vdir.after = [array<i64: [[S0]], [[S1:[0-9]+]]>]}
// CHECK:       %[[XN1:.*]] = vdir.compute rmsnorm({{.*}}vdir.sm = 1 : i64
// CHECK:       vdir.compute silu_mul({{.*}}vdir.sm = 1 : i64
// CHECK:       vdir.store %{{.*}}, %act[0, 32] on store {vdir.id = [[S1]] : i64, vdir.seq = {{[0-9]+}} : i64, vdir.sm = 1 : i64}
// CHECK:       vdir.load %act[0, 0] on load {{{.*}}vdir.sm = 1 : i64, vdir.after = [array<i64: [[S0]], [[S1]]>]}
