// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-verify-deps{annotate=true}' | filecheck %s

// The analysis expands the two repeats (26 micro-ops), counts tile and
// ordering edges — including the derived read-after-write from the stores to
// %act to its reload — and the cost model's critical path.

// CHECK: vdir.program @mlp({{.*}}) attributes {vdir.micro_ops = 26 : i64, vdir.edges = {{[0-9]+}} : i64, vdir.critical_path_us = {{[0-9.e+-]+}} : f64}
// CHECK: vdir.repeat %i = 0 to 2 {
