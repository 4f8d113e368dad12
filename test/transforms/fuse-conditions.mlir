// RUN: vdir-opt %s -p vdir-fuse | filecheck %s

// vdir-fuse and runtime conditions: a producer and a consumer with the same
// condition fuse, and the fused micro-op keeps it; different conditions (or
// one without) stay apart. A load merges into an earlier identical one only
// if the earlier one runs whenever the later one would (no condition, or
// the same).

// CHECK-LABEL: vdir.program @same
// CHECK:         %y = vdir.compute gemv_add(%wt, %xt, %rt) when %n >= 1 on compute
vdir.program @same(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %r: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>, %n: index in 0 to 4) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %rt = vdir.load %r[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %g = vdir.compute gemv(%wt, %xt) when %n >= 1 : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute add(%g, %rt) when %n >= 1 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %y, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// CHECK-LABEL: vdir.program @different
// CHECK:         %g = vdir.compute gemv(%wt, %xt) when %n >= 1 on compute
// CHECK-NEXT:    %y = vdir.compute add(%g, %rt) when %n >= 2 on compute
// CHECK:         %g2 = vdir.compute gemv(%wt, %xt) on compute
// CHECK-NEXT:    %y2 = vdir.compute add(%g2, %rt) when %n >= 2 on compute
vdir.program @different(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %r: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>, %n: index in 0 to 4) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %rt = vdir.load %r[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %g = vdir.compute gemv(%wt, %xt) when %n >= 1 : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute add(%g, %rt) when %n >= 2 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %y, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %g2 = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y2 = vdir.compute add(%g2, %rt) when %n >= 2 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s2 = vdir.store %y2, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// CHECK-LABEL: vdir.program @loads
// CHECK:         %a = vdir.load %x[0, 0] when %n >= 1 on load
// CHECK-NEXT:    %b = vdir.load %x[0, 0] on load
// CHECK-NEXT:    %s1 = vdir.store %a, %out[0, 0]
// CHECK-NEXT:    %s2 = vdir.store %b, %out[0, 0]
// CHECK-NEXT:    %s3 = vdir.store %b, %out[0, 0] when %n >= 3
vdir.program @loads(%x: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>, %n: index in 0 to 4) {
  %a = vdir.load %x[0, 0] when %n >= 1 : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %b = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %c = vdir.load %x[0, 0] when %n >= 3 : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %a, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %s2 = vdir.store %b, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %s3 = vdir.store %c, %out[0, 0] when %n >= 3 : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
