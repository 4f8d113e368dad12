// RUN: vdir-opt %S/../../examples/mlp_stack_split_k.mlir | filecheck %s
// RUN: vdir-opt %S/../../examples/mlp_stack_split_k.mlir --print-op-generic | vdir-opt | filecheck %s
// RUN: vdir-opt %S/../../examples/mlp_stack_split_k.mlir -p 'vdir-pipeline{num-sms=132}' -t isa | filecheck %s --check-prefix=ISA

// The accumulator is cleared first, then each group's fixed-point partial is
// added into its layer's row; the next layer's residual reads the sum back.
// CHECK:      vdir.program @mlp_stack_split_k({{.*}}%wdt: !vdir.buffer<131072x2048xbf16>, %acc: !vdir.buffer<16x2048xi64> scratch) attributes {target = "h200"} {
// CHECK-NEXT:   %zero = vdir.compute zeros() {rows = 1 : i64, cols = 2048 : i64} on compute : () -> !vdir.tile<1x2048xi64>
// CHECK:        %cleared = vdir.store %zero, %acc[%c, 0] on store
// CHECK:        vdir.repeat %q = 0 to 128 {
// CHECK:          %dsum = vdir.compute vecmat(%a_t3, %wdt_t3, %dp_t2) on compute : (!vdir.tile<1x16xbf16>, !vdir.tile<16x2048xbf16>, !vdir.tile<1x2048xf32>) -> !vdir.tile<1x2048xi64>
// CHECK-NEXT:     %added = vdir.store %dsum, %acc[0, 0] reduce add on store : !vdir.tile<1x2048xi64>, !vdir.buffer<16x2048xi64>
// CHECK:        %ht = vdir.compute fixed_add(%total, %before) on compute : (!vdir.tile<1x2048xi64>, !vdir.tile<1x2048xbf16>) -> !vdir.tile<1x2048xbf16>

// acc is scratch (the program clears it before adding); the adds are code 2
// (REDUCE_ADD_I64), listed as reduce add; one a group, 128 a layer.
// ISA:      // buffer 5: acc 16x2048 i64 (scratch)
// ISA:      store smem[{{[0-9]+}}] -> @acc+{{[0-9]+}} [1 x 16384B, stride 16384] reduce add
