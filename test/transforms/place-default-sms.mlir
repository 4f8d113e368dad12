// RUN: vdir-opt %s -p vdir-place | filecheck %s
// RUN: vdir-opt %s -p 'vdir-place{target=h100}' | filecheck %s --check-prefix=H100
// RUN: vdir-opt %s -p 'vdir-place{num-sms=1}' | filecheck %s --check-prefix=ONE

// Without options placement uses every SM of the program's target (h200:
// 132); the target option picks another description; with one SM every
// micro-op lands on SM 0.

// CHECK: vdir.program @p{{.*}}vdir.num_sms = 132 : i64
// CHECK-COUNT-2: vdir.sm = 0 : i64
// CHECK: vdir.sm = 1 : i64
// H100: vdir.program @p{{.*}}vdir.num_sms = 132 : i64
// ONE: vdir.program @p{{.*}}vdir.num_sms = 1 : i64
// ONE-NOT: vdir.sm = 1
vdir.program @p(%x: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) {
  %a = vdir.load %x[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %a, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
  %b = vdir.load %x[1, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<1x64xbf16>
  %t = vdir.store %b, %y[1, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<2x64xbf16>
}
