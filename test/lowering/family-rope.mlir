// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s

// The rope body (family 9): p2's flag (1) picks the f32-table loop or the
// bf16 one. Each thread takes elements i = thread, thread + 256, ...; its
// column c = i mod D and the partner element i + D/2 (first half, negated)
// or i - D/2 (second half); y = x * cos[c] + partner * sin[c], the two
// products and the sum rounded to f32 in that order, then once to bf16.
// The tables are loaded at the launch-time position (a runtime row offset).

// CHECK-LABEL: $L_fam9_0:
// CHECK-NEXT: and.b32 [[FL:%r[0-9]+]], {{%r[0-9]+}}, 1;
// CHECK-NEXT: setp.ne.u32 [[F32:%p[0-9]+]], [[FL]], 0;
// CHECK-NEXT: @[[F32]] bra $L_rope_f32_0;
// CHECK-NEXT: shr.u32 [[HALF:%r[0-9]+]], [[D:%r[0-9]+]], 1;
// CHECK:      $L_rope_bf16_0:
// CHECK:      div.u32 [[ROW:%r[0-9]+]], [[I:%r[0-9]+]], [[D]];
// CHECK-NEXT: mul.lo.u32 [[RD:%r[0-9]+]], [[ROW]], [[D]];
// CHECK-NEXT: sub.u32 [[COL:%r[0-9]+]], [[I]], [[RD]];
// CHECK-NEXT: setp.lt.u32 [[FIRST:%p[0-9]+]], [[COL]], [[HALF]];
// CHECK-NEXT: add.u32 [[UP:%r[0-9]+]], [[I]], [[HALF]];
// CHECK-NEXT: sub.u32 [[DOWN:%r[0-9]+]], [[I]], [[HALF]];
// CHECK-NEXT: selp.u32 {{%r[0-9]+}}, [[UP]], [[DOWN]], [[FIRST]];
// CHECK:      neg.f32 [[NEG:%f[0-9]+]], [[P:%f[0-9]+]];
// CHECK-NEXT: selp.f32 [[ROT:%f[0-9]+]], [[NEG]], [[P]], [[FIRST]];
// CHECK:      mul.rn.f32 [[A:%f[0-9]+]], [[X:%f[0-9]+]], [[COS:%f[0-9]+]];
// CHECK-NEXT: mul.rn.f32 [[B:%f[0-9]+]], [[ROT]], [[SIN:%f[0-9]+]];
// CHECK-NEXT: add.rn.f32 [[Y:%f[0-9]+]], [[A]], [[B]];
// CHECK:      cvt.rn.bf16.f32 {{%h[0-9]+}}, [[Y]];
// CHECK:      $L_rope_f32_0:
// CHECK:      ld.shared.f32

vdir.program @rope(%q: !vdir.buffer<8x128xbf16>, %cos: !vdir.buffer<256x128xf32>, %sin: !vdir.buffer<256x128xf32>, %out: !vdir.buffer<8x128xbf16>, %pos: index in 0 to 256) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<8x128xbf16> -> !vdir.tile<8x128xbf16>
  %ct = vdir.load %cos[%pos, 0] : !vdir.buffer<256x128xf32> -> !vdir.tile<1x128xf32>
  %st = vdir.load %sin[%pos, 0] : !vdir.buffer<256x128xf32> -> !vdir.tile<1x128xf32>
  %qr = vdir.compute rope(%qt, %ct, %st) : (!vdir.tile<8x128xbf16>, !vdir.tile<1x128xf32>, !vdir.tile<1x128xf32>) -> !vdir.tile<8x128xbf16>
  %s = vdir.store %qr, %out[0, 0] : !vdir.tile<8x128xbf16>, !vdir.buffer<8x128xbf16>
}
