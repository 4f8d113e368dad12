// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: unknown target 'mi300' (known: h100, h200)
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) attributes {target = "mi300"} {
}

// -----

// CHECK: error: program attribute 'target' must be a string
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) attributes {target = 200 : i64} {
}
