// RUN: not vdir-opt %s -t ptx 2>&1 | filecheck %s
// RUN: not vdir-opt %s -p vdir-place -t ptx 2>&1 | filecheck %s

// -t ptx lowers an encoded program only: on the source program, or after a
// pipeline that stops before vdir-encode, vdir-opt fails with a one-line
// error naming the fix, and prints no PTX.

// CHECK:     error: -t ptx needs an encoded program; run '-p vdir-pipeline' (or end the pipeline with vdir-encode) first
// CHECK-NOT: .entry
// CHECK-NOT: Traceback

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
