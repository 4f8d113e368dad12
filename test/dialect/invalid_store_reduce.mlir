// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// `reduce add` adds f32 values: a bf16 (or i32) tile is refused, at the store.

vdir.program @bf16(%a: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: store: 'reduce add' needs an f32 or i64 tile, got bf16
  %s = vdir.store %t, %y[0, 0] reduce add : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// -----

vdir.program @i32(%a: !vdir.buffer<1x4xi32>, %y: !vdir.buffer<1x4xi32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x4xi32> -> !vdir.tile<1x4xi32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: store: 'reduce add' needs an f32 or i64 tile, got i32
  %s = vdir.store %t, %y[0, 0] reduce add : !vdir.tile<1x4xi32>, !vdir.buffer<1x4xi32>
}

// -----

// An unknown reduction is a parse error at the word.

vdir.program @unknown(%a: !vdir.buffer<1x4xf32>, %y: !vdir.buffer<1x4xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:39: error: unknown reduction 'mul' (expected add)
  %s = vdir.store %t, %y[0, 0] reduce mul : !vdir.tile<1x4xf32>, !vdir.buffer<1x4xf32>
}
