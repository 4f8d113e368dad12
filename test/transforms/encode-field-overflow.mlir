// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1}' 2>&1 | filecheck %s

// A value the instruction field cannot hold is a located error naming the
// micro-op, not an internal field overflow: here a runtime row offset whose
// step (one 2 GiB row) does not fit the signed 32-bit dyn_scale. (A region
// whose row lies beyond a tensor copy's 32-bit coordinates is copied with
// plain bulk copies instead, so it needs no tensor-map field.)

// CHECK: encode-field-overflow.mlir:11:3: error: vdir-pipeline: %t cannot be encoded: 2147483648 does not fit the signed 32-bit field 'dyn_scale'
vdir.program @p(%x: !vdir.buffer<4x1073741824xbf16>, %y: !vdir.buffer<1x8xbf16>, %n: index in 0 to 4) {
  %t = vdir.load %x[%n, 0] : !vdir.buffer<4x1073741824xbf16> -> !vdir.tile<1x8xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
