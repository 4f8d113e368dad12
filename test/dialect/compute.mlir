// RUN: %roundtrip
// RUN: vdir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A compute runs an op family on tiles. Family parameters follow the
// operands (a family without any has no `params` property in the generic
// form); the result type is checked against the family's signature.

vdir.program @compute(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %n = vdir.compute rmsnorm(%xt, %gt) {eps = 1.000000e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.compute add(%n, %xt) on compute flow 2 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %done = vdir.store %s, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// CHECK-LABEL: vdir.program @compute
// CHECK:       %n = vdir.compute rmsnorm(%xt, %gt) {eps = 1.000000e-05 : f32} on compute : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
// CHECK:       %s = vdir.compute add(%n, %xt) on compute flow 2 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>

// GENERIC:     %n = "vdir.compute"(%xt, %gt) <{family = "rmsnorm", params = {eps = 1.000000e-05 : f32}, engine = #vdir.engine<compute>, operandSegmentSizes = array<i32: 2, 0, 0>}> : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
// GENERIC:     %s = "vdir.compute"(%n, %xt) <{family = "add", engine = #vdir.engine<compute>, flow = 2 : i64, operandSegmentSizes = array<i32: 2, 0, 0>}>
