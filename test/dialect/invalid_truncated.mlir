// RUN: vdir-opt %s --print-diagnostics | filecheck %s

// The file ends inside the program's body.
// CHECK: {{.*}}:[[# @LINE + 4]]:1: error: the input ends inside a region: expected '}'{{$}}
vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
