// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s

// Edges inside an SM become bits: a producer toggles its bit (vdir.signal), a
// waiter waits for the parity that toggle leaves (vdir.wait = [bit, parity]).
// Edges implied by queue order need no bit: %x is loaded before %gt on the
// in-order load engine, so the rmsnorm only waits for %gt; and since the
// scheduler hoisted %wdt ahead of %av (which waits on the other SM), the gemv
// on %av only waits for %av.

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    vdir.stage = "laid-out"
// CHECK:       %x = vdir.load %h[0, 0] on load {vdir.id = 0 : i64, vdir.sm = 0 : i64, vdir.pos = 0 : i64, vdir.smem = {{[0-9]+}} : i64}
// CHECK-NEXT:  %gt = vdir.load {{.*}}vdir.signal = array<i64: [[BG:[0-9]+]]>}
// CHECK-NEXT:  %xn = vdir.compute rmsnorm({{.*}}vdir.wait = array<i64: [[BG]], 1>}
// CHECK-NEXT:  %wgt = vdir.load {{.*}}vdir.signal = array<i64: [[BW:[0-9]+]]>}
// CHECK-NEXT:  %gate = vdir.compute gemv({{.*}}vdir.wait = array<i64: [[BW]], 1>}
// CHECK:       %a = vdir.compute silu_mul({{.*}}vdir.signal = array<i64: [[BA:[0-9]+]]>}
// CHECK-NEXT:  vdir.store %a, %act[0, 0] {{.*}}vdir.wait = array<i64: [[BA]], 1>
// CHECK:       %av = vdir.load {{.*}}vdir.signal = array<i64: [[BV:[0-9]+]]>
// CHECK:       %d = vdir.compute gemv(%wdt, %av) {{.*}}vdir.wait = array<i64: [[BV]], 1>}
