// What xDSL's parser reads but cannot hold, or would take minutes and
// gigabytes to expand, is a located one-line error, never a traceback or a
// hang: integer widths with no packed form, 80-bit floats in a dense
// attribute, external resources, and dense attributes of more than 2^20
// elements (refused when their type is read, before the splat is expanded).

// RUN: not vdir-opt %s --split-input-file 2>&1 | filecheck %s
// CHECK-NOT: Traceback

// CHECK: invalid_builtin_attrs.mlir:[[# @LINE + 1]]:45: error: not supported: Format not implemented for i128
builtin.module attributes {a = array<i128: 1>} {
}

// -----

// CHECK: invalid_builtin_attrs.mlir:[[# @LINE + 1]]:56: error: not supported: xDSL cannot represent what is written here
builtin.module attributes {a = dense<1> : tensor<2xf80>} {
}

// -----

// CHECK: invalid_builtin_attrs.mlir:[[# @LINE + 1]]:43: error: a dense attribute of 30000000 elements: at most 1048576 are read
builtin.module attributes {a = dense<1> : tensor<30000000xi32>} {
}

// -----

// CHECK: invalid_builtin_attrs.mlir:[[# @LINE + 1]]:83: error: a dense attribute of 99999999999 elements: at most 1048576 are read
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) attributes {w = dense<"0x01000000"> : tensor<99999999999xi32>} {
}

// -----

builtin.module {
}
// CHECK: invalid_builtin_attrs.mlir:[[# @LINE + 1]]:25: error: not supported: Currently only dialect resources are supported
{-# external_resources: {} #-}
