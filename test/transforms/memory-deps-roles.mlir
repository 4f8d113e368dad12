// RUN: vdir-opt %S/Inputs/memdeps.mlir -p 'vdir-pipeline{num-sms=1}' | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-pipeline{num-sms=2}' | filecheck %s --check-prefix=MLP

// The analysis gives every argument a role: @x is read and then overwritten
// (inout); @y is only read after the program wrote it (out). In the MLP,
// @act is written before it is read back, so a caller need not pass it.

// CHECK: buffers = ["x:1x64:bf16:inout", "y:1x64:bf16:out"]
// MLP: buffers = ["h:1x64:bf16:in", "g:1x64:bf16:in", "wg:64x64:bf16:in", "wu:64x64:bf16:in", "wd:64x64:bf16:in", "act:1x64:bf16:out", "out:1x64:bf16:out"]
