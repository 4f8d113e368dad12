// RUN: not vdir-opt %s -p 'vdir-place{num-sms=500}' 2>&1 | filecheck %s --check-prefix=SMS
// RUN: not vdir-opt %s -p 'vdir-place{target=mi300}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not vdir-opt %s -p 'vdir-place{num-sms=2},vdir-place{num-sms=2}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not vdir-opt %s -p 'vdir-place{sms=2}' 2>&1 | filecheck %s --check-prefix=OPTION

// SMS: error: vdir-place: target 'h200' has 132 SMs; cannot use 500
// TARGET: error: vdir-place: unknown target 'mi300' (known: h100, h200)
// TWICE: place-errors.mlir:[[# @LINE + 3]]:1: error: vdir-place: the program is already at stage 'placed'; this pass expects 'source'
// OPTION: error: bad pass pipeline 'vdir-place{sms=2}'

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
