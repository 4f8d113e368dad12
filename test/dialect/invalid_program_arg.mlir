// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Program arguments are global buffers, then launch-time scalars (index).

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #1 must be a !vdir.buffer or an index scalar, got i32
vdir.program @i32_arg(%a: !vdir.buffer<1x8xbf16>, %n: i32) {
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 must be a !vdir.buffer or an index scalar, got !vdir.tile<1x8xbf16>
vdir.program @tile_arg(%t: !vdir.tile<1x8xbf16>) {
}
