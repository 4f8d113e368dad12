// RUN: vdir-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Program arguments are global buffers.

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #1 must be a !vdir.buffer, got index
vdir.program @index_arg(%a: !vdir.buffer<1x8xbf16>, %n: index) {
}

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0 must be a !vdir.buffer, got !vdir.tile<1x8xbf16>
vdir.program @tile_arg(%t: !vdir.tile<1x8xbf16>) {
}
