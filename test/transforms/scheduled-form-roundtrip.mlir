// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-pipeline{num-sms=2}' > %t.pipeline.mlir
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p vdir-fuse | vdir-opt -p 'vdir-place{num-sms=2}' | vdir-opt -p vdir-schedule > %t.scheduled.mlir
// RUN: vdir-opt %t.scheduled.mlir | diff %t.scheduled.mlir -
// RUN: vdir-opt %t.scheduled.mlir --print-op-generic | vdir-opt | diff %t.scheduled.mlir -
// RUN: vdir-opt %t.scheduled.mlir -p vdir-alloc-smem | vdir-opt -p vdir-layout-deps > %t.laidout.mlir
// RUN: vdir-opt %t.laidout.mlir | diff %t.laidout.mlir -
// RUN: vdir-opt %t.laidout.mlir --print-op-generic | vdir-opt | diff %t.laidout.mlir -
// RUN: filecheck %s < %t.laidout.mlir
// RUN: vdir-opt %t.laidout.mlir -p vdir-encode | grep -o 'code = "[^"]*"' > %t.stepwise.code
// RUN: grep -o 'code = "[^"]*"' %t.pipeline.mlir | diff %t.stepwise.code -

// The scheduled form is plain IR: printed, re-parsed and printed again (in
// the custom and the generic form) it is unchanged, and running the passes
// one vdir-opt at a time, through the text, encodes exactly the program that
// vdir-pipeline encodes in memory. The engine vdir-place chose travels with
// the text: the loads that wait on nothing on the stream engine, the reload
// of %act, which waits on both SMs' stores, on the load engine.

// CHECK:      vdir.program @mlp({{.*}}) attributes {target = "h200", vdir.stage = #vdir.stage<laid-out>, vdir.layout = #vdir.layout<num_sms = 2, smem_bytes = {{[0-9]+}}, counter_counts = [2], buffer_roles = [in, in, in, in, in, out, out]>} {
// CHECK-NEXT:   %x = vdir.load %h[0, 0] on stream {vdir.sched = #vdir.sched<id = 0, sm = 0, pos = 0, smem = {{[0-9]+}}>}
// CHECK:        %av = vdir.load %act[0, 0] on load {vdir.sched = #vdir.sched<id = {{[0-9]+}}, seq = {{[0-9]+}}, sm = 0, pos = {{[0-9]+}}, smem = {{[0-9]+}}, signal = [{{[0-9]+}}], wait_counters = [0 : 2], after = {{\[\[[0-9]+, [0-9]+\]\]}}>}
