// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-pipeline{num-sms=2}' > %t.mlir
// RUN: vdir-opt %t.mlir | filecheck %s
// RUN: vdir-opt %t.mlir | vdir-opt -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %t.mlir --print-op-generic | vdir-opt | diff - %t.mlir

// The encoded program is a vdir.encoded_program op: the binary queues travel
// compressed in `code`, the micro-op names in `names`; it round-trips through
// the custom and the generic form unchanged.

// CHECK:      vdir.encoded_program @mlp {target = "h200", buffers = ["h:1x64:bf16:in", "g:1x64:bf16:in", "wg:64x64:bf16:in", "wu:64x64:bf16:in", "wd:64x64:bf16:in", "act:1x64:bf16:out", "out:1x64:bf16:out"], code = "{{[A-Za-z0-9+/=]+}}", names = "{{[A-Za-z0-9+/=]+}}"}
// CHECK-NOT:  vdir.program
// ISA:        // @mlp: 2 SMs
// ISA:        gemv_silu_mul(
// ISA:        gemv_add(
