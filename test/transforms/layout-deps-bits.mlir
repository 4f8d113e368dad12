// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s

// Edges inside an SM become bits: a producer toggles its bit (signal), a
// waiter waits for the parity that toggle leaves (wait = [bit : parity]).
// Edges implied by queue order need no bit: %x is loaded before %gt on the
// in-order load engine, so the rmsnorm only waits for %gt; and since the
// scheduler hoisted %wdt ahead of %av (which waits on the other SM), the gemv
// on %av only waits for %av.

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    vdir.stage = #vdir.stage<laid-out>
// CHECK:       %x = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = {{[0-9]+}}>}
// CHECK-NEXT:  %gt = vdir.load {{.*}}signal = [[[BG:[0-9]+]]]>}
// CHECK-NEXT:  %xn = vdir.compute rmsnorm({{.*}}wait = [[[BG]] : 1]>}
// CHECK-NEXT:  %wgt = vdir.load {{.*}}signal = [[[BW:[0-9]+]]]>}
// CHECK-NEXT:  %gate = vdir.compute gemv({{.*}}wait = [[[BW]] : 1]>}
// CHECK:       %a = vdir.compute silu_mul({{.*}}signal = [[[BA:[0-9]+]]]>}
// CHECK-NEXT:  vdir.store %a, %act[0, 0] {{.*}}wait = [[[BA]] : 1]
// CHECK:       %av = vdir.load {{.*}}signal = [[[BV:[0-9]+]]]
// CHECK:       %d = vdir.compute gemv(%wdt, %av) {{.*}}wait = [[[BV]] : 1]>}
