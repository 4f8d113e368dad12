// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Every program argument has its own name (inputs bind to arrays by name),
// one that the text form can write after `%`. The custom form cannot repeat
// a name; the generic form's `arg_names` can, and is checked.

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #1: name 'x' is already taken by argument #0
"vdir.program"() <{sym_name = "twice", arg_names = ["x", "x", "y"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>, %b: !vdir.buffer<1x8xbf16>, %c: !vdir.buffer<1x8xbf16>):
}) : () -> ()

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0: name 'a b' is not an identifier (letters, digits, '_', '$', '.', '-'; not starting with a digit unless all digits)
"vdir.program"() <{sym_name = "space", arg_names = ["a b"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
}) : () -> ()

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #1: name '' is not an identifier
"vdir.program"() <{sym_name = "empty", arg_names = ["a", ""]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>, %b: !vdir.buffer<1x8xbf16>):
}) : () -> ()

// -----

// CHECK: {{.*}}:[[# @LINE + 1]]:1: error: program argument #0: name '1x' is not an identifier
"vdir.program"() <{sym_name = "digit", arg_names = ["1x"]}> ({
^bb0(%a: !vdir.buffer<1x8xbf16>):
}) : () -> ()
