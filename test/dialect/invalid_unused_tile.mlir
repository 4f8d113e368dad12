// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Every tile must be consumed: a load or compute whose result is never used
// is rejected, naming the tile.

vdir.program @unused_load(%a: !vdir.buffer<4x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: tile %t is produced but never used
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
}

// -----

vdir.program @unused_compute(%a: !vdir.buffer<4x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: tile %sum is produced but never used
  %sum = vdir.compute add(%t, %t) : (!vdir.tile<4x8xbf16>, !vdir.tile<4x8xbf16>) -> !vdir.tile<4x8xbf16>
}

// -----

// An unnamed tile is named by the op that produces it.
vdir.program @unused_unnamed(%a: !vdir.buffer<4x8xbf16>) {
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: the tile produced by vdir.load is never used
  %0 = vdir.load %a[0, 0] : !vdir.buffer<4x8xbf16> -> !vdir.tile<4x8xbf16>
}
