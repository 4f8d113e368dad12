// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-pipeline{num-sms=2}' -t isa | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-pipeline{num-sms=2 fuse=false}' -t isa | filecheck %s --check-prefix=NOFUSE
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-pipeline{target=h100 num-sms=4}' -t isa | filecheck %s --check-prefix=H100

// vdir-pipeline runs every pass: the silu_mul and the residual add fuse into
// gemv epilogues (the rmsnorm has two users, so it stays), then placement,
// scheduling, allocation, dependency layout and encoding.

// CHECK:     // @mlp: 2 SMs
// CHECK:     sm 0 compute:
// CHECK-NEXT:  0: rmsnorm(
// CHECK-NEXT:  1: gemv(
// CHECK-NEXT:  2: gemv_silu_mul({{.*}}p=(32, 64, 1)
// CHECK-NEXT:  3: gemv_add(
// CHECK-NOT: {{^ *[0-9]+: silu_mul\(}}

// NOFUSE:     sm 0 compute:
// NOFUSE-NEXT:  0: rmsnorm(
// NOFUSE-NEXT:  1: gemv(
// NOFUSE-NEXT:  2: gemv(
// NOFUSE-NEXT:  3: silu_mul(
// NOFUSE-NEXT:  4: gemv(
// NOFUSE-NEXT:  5: add(

// H100:      // @mlp: 4 SMs
// H100:      sm 3 store:
