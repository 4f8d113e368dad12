// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule' | filecheck %s

// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule' | filecheck %s --check-prefix=ONEQUEUE

// Each (SM, engine) queue is numbered in program order, independently per
// SM: computes 0..5 on the compute engine, stores 0..1 on the store engine.
// The loads that wait on nothing are on the stream engine (positions 0..5);
// %av, which waits on the stores of @act of both SMs, is alone on the load
// engine (position 0). No queue holds both a waiting load and independent
// ones, so nothing is hoisted: %wdt and %res keep their program order
// (seq 16, 18), and the stream engine runs ahead of %av's wait by itself.

// CHECK-LABEL: vdir.program @mlp
// CHECK-SAME:    vdir.stage = #vdir.stage<scheduled>
// CHECK:       %x = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %gt = vdir.load %g[0, 0] on stream {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 1{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %xn = vdir.compute rmsnorm({{.*}}sm = 0, pos = 0{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %wgt = vdir.load {{.*}} on stream {{.*}}pos = 2{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %gate = vdir.compute gemv({{.*}}pos = 1{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %wut = vdir.load {{.*}} on stream {{.*}}pos = 3{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %up = vdir.compute gemv({{.*}}pos = 2{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %a = vdir.compute silu_mul({{.*}}pos = 3{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  vdir.store %a, %act[0, 0] on store {{.*}}pos = 0{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = 9, seq = 15, sm = 0, pos = 0, after = {{\[\[}}8, 23]]>}
// CHECK-NEXT:  %wdt = vdir.load %wd[0, 0] on stream {vdir.sched = #vdir.sched<id = 10, seq = 16, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %d = vdir.compute gemv({{.*}}pos = 4{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %res = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 12, seq = 18, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// CHECK:       vdir.store {{.*}}%out[0, 0] on store {{.*}}sm = 0, pos = 1{{(, label = "[^"]*")?}}>}
// CHECK-NEXT:  %x_1 = vdir.load %h[0, 0] on stream {{.*}}sm = 1, pos = 0{{(, label = "[^"]*")?}}>}
// CHECK:       %av_1 = vdir.load %act[0, 0] on load {{.*}}sm = 1, pos = 0, after = {{\[\[}}8, 23]]>}

// With stream-loads=false every load stays on the load engine, numbered 0..6
// with %av behind the two loads hoisted ahead of it.
// ONEQUEUE-LABEL: vdir.program @mlp
// ONEQUEUE-SAME:    vdir.stage = #vdir.stage<scheduled>
// ONEQUEUE:       %x = vdir.load %h[0, 0] on load {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %gt = vdir.load %g[0, 0] on load {vdir.sched = #vdir.sched<id = 1, sm = 0, pos = 1{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %xn = vdir.compute rmsnorm({{.*}}sm = 0, pos = 0{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %wgt = vdir.load {{.*}} on load {{.*}}pos = 2{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %gate = vdir.compute gemv({{.*}}pos = 1{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %wut = vdir.load {{.*}} on load {{.*}}pos = 3{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %up = vdir.compute gemv({{.*}}pos = 2{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %a = vdir.compute silu_mul({{.*}}pos = 3{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  vdir.store %a, %act[0, 0] on store {{.*}}pos = 0{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %av = vdir.load %act[0, 0] on load {{.*}}sm = 0, pos = 6, after = {{\[\[}}8, 23]]>}
// ONEQUEUE-NEXT:  %wdt = vdir.load %wd[0, 0] on load {{.*}}hoist = -2, sm = 0, pos = 4{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %d = vdir.compute gemv({{.*}}pos = 4{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %res = vdir.load %h[0, 0] on load {{.*}}hoist = -1, sm = 0, pos = 5{{(, label = "[^"]*")?}}>}
// ONEQUEUE:       vdir.store {{.*}}%out[0, 0] on store {{.*}}sm = 0, pos = 1{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NEXT:  %x_1 = vdir.load %h[0, 0] on load {{.*}}sm = 1, pos = 0{{(, label = "[^"]*")?}}>}
// ONEQUEUE-NOT:   on stream
