// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s --check-prefix=ONEQUEUE

// Edges inside an SM become bits: a producer toggles its bit (signal), a
// waiter waits for the parity that toggle leaves (wait = [bit : parity]).
// Edges implied by queue order need no bit: %x is loaded before %gt on the
// in-order stream engine, so the rmsnorm only waits for %gt.
//
// Queue order implies nothing across queues: %wdt is on the stream engine
// and %av (which waits on the other SM) on the load engine, so %wdt signals
// a bit of its own and the gemv on both waits for both bits. With one load
// queue (ONEQUEUE, stream-loads=false) the scheduler hoists %wdt ahead of
// %av; it completes before %av in the queue, needs no bit, and the gemv only
// waits for %av.

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    vdir.stage = #vdir.stage<laid-out>
// CHECK:       %x = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = {{[0-9]+}}>}
// CHECK-NEXT:  %gt = vdir.load {{.*}} on stream {{.*}}signal = [[[BG:[0-9]+]]]>}
// CHECK-NEXT:  %xn = vdir.compute rmsnorm({{.*}}wait = [[[BG]] : 1]>}
// CHECK-NEXT:  %wgt = vdir.load {{.*}}signal = [[[BW:[0-9]+]]]>}
// CHECK-NEXT:  %gate = vdir.compute gemv({{.*}}wait = [[[BW]] : 1]>}
// CHECK:       %a = vdir.compute silu_mul({{.*}}signal = [[[BA:[0-9]+]]]>}
// CHECK-NEXT:  vdir.store %a, %act[0, 0] {{.*}}wait = [[[BA]] : 1]
// CHECK-NEXT:  %av = vdir.load %act[0, 0] on load {{.*}}signal = [[[BV:[0-9]+]]]
// CHECK-NEXT:  %wdt = vdir.load %wd[0, 0] on stream {{.*}}seq = 16, {{.*}}signal = [[[BD:[0-9]+]]]>}
// CHECK-NEXT:  %d = vdir.compute gemv(%wdt, %av) {{.*}}wait = [[[BV]] : 1, [[BD]] : 1]>}

// ONEQUEUE-LABEL: vdir.program @mlp
// ONEQUEUE-SAME:    vdir.stage = #vdir.stage<laid-out>
// ONEQUEUE:       %x = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = {{[0-9]+}}>}
// ONEQUEUE-NEXT:  %gt = vdir.load {{.*}}signal = [[[BG:[0-9]+]]]>}
// ONEQUEUE-NEXT:  %xn = vdir.compute rmsnorm({{.*}}wait = [[[BG]] : 1]>}
// ONEQUEUE-NEXT:  %wgt = vdir.load {{.*}}signal = [[[BW:[0-9]+]]]>}
// ONEQUEUE-NEXT:  %gate = vdir.compute gemv({{.*}}wait = [[[BW]] : 1]>}
// ONEQUEUE:       %a = vdir.compute silu_mul({{.*}}signal = [[[BA:[0-9]+]]]>}
// ONEQUEUE-NEXT:  vdir.store %a, %act[0, 0] {{.*}}wait = [[[BA]] : 1]
// ONEQUEUE-NEXT:  %wdt = vdir.load %wd[0, 0] on load {vdir.sched = #vdir.sched<id = {{[0-9]+}}, seq = 15, hoist = -2, sm = 0, pos = 4, smem = {{[0-9]+}}{{(, label = "[^"]*")?}}>}
// ONEQUEUE:       %av = vdir.load {{.*}}signal = [[[BV:[0-9]+]]]
// ONEQUEUE:       %d = vdir.compute gemv(%wdt, %av) {{.*}}wait = [[[BV]] : 1]>}
