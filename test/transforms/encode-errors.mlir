// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// A damaged encoded program is rejected where it is written.

// CHECK: encode-errors.mlir:[[# @LINE + 1]]:1: error: bad encoded program: cannot decode the program's code
vdir.encoded_program @p {target = "h200", buffers = ["x:1x8:bf16:in"], code = "bm90IHZkaXI=", names = "eJwDAAAAAAE="}

// -----

// CHECK: encode-errors.mlir:[[# @LINE + 1]]:1: error: malformed buffer entry 'x:1x8:bf16' (want name:RxC:dtype:in|out|inout|scratch)
vdir.encoded_program @p {target = "h200", buffers = ["x:1x8:bf16"], code = "", names = ""}
