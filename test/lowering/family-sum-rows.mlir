// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=ONLY

// A sum_rows program emits the sum_rows body (family 8) alone. Each thread
// owns columns c = thread, thread + 256, ... and adds the P rows of its
// column in order, from +0.0, one add.rn.f32 per row (the address steps by
// a row of C f32); no shuffle, no shared scratch, no atomic. The result is
// stored as f32 or rounded once to bf16, as p2's flag (2) says.

// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: @[[P]] bra.uni $L_fam8_0;

// CHECK-LABEL: $L_fam8_0:
// CHECK-NEXT: mul.lo.u32 [[ROWB:%r[0-9]+]], [[C:%r[0-9]+]], 4;
// CHECK-NEXT: and.b32 [[FL:%r[0-9]+]], {{%r[0-9]+}}, 2;
// CHECK-NEXT: setp.ne.u32 [[F32:%p[0-9]+]], [[FL]], 0;
// CHECK-NEXT: mov.u32 [[COL:%r[0-9]+]], {{%r[0-9]+}};
// CHECK-NEXT: $L_sum_rows_0:
// CHECK-NEXT: setp.ge.u32 {{%p[0-9]+}}, [[COL]], [[C]];
// CHECK-NEXT: @{{%p[0-9]+}} bra $L_sum_rows_end_0;
// CHECK-NEXT: mov.f32 [[ACC:%f[0-9]+]], 0f00000000;
// CHECK-NEXT: mad.lo.u32 [[A:%r[0-9]+]], [[COL]], 4, {{%r[0-9]+}};
// CHECK-NEXT: mov.u32 [[ROW:%r[0-9]+]], 0;
// CHECK-NEXT: $L_sum_rows_row_0:
// CHECK-NEXT: setp.ge.u32 {{%p[0-9]+}}, [[ROW]], {{%r[0-9]+}};
// CHECK-NEXT: @{{%p[0-9]+}} bra $L_sum_rows_row_end_0;
// CHECK-NEXT: ld.shared.f32 [[V:%f[0-9]+]], {{\[}}[[A]]];
// CHECK-NEXT: add.rn.f32 [[ACC]], [[ACC]], [[V]];
// CHECK-NEXT: add.u32 [[A]], [[A]], [[ROWB]];
// CHECK-NEXT: add.u32 [[ROW]], [[ROW]], 1;
// CHECK-NEXT: bra.uni $L_sum_rows_row_0;
// CHECK-NEXT: $L_sum_rows_row_end_0:
// CHECK-NEXT: mad.lo.u32 [[O4:%r[0-9]+]], [[COL]], 4, {{%r[0-9]+}};
// CHECK-NEXT: @[[F32]] st.shared.f32 {{\[}}[[O4]]], [[ACC]];
// CHECK-NEXT: mad.lo.u32 [[O2:%r[0-9]+]], [[COL]], 2, {{%r[0-9]+}};
// CHECK-NEXT: cvt.rn.bf16.f32 [[H:%h[0-9]+]], [[ACC]];
// CHECK-NEXT: @![[F32]] st.shared.b16 {{\[}}[[O2]]], [[H]];
// CHECK-NEXT: add.u32 [[COL]], [[COL]], 256;
// CHECK-NEXT: bra.uni $L_sum_rows_0;
// CHECK-NEXT: $L_sum_rows_end_0:
// CHECK-NEXT: bra.uni $L_cp_body_done_0;

// ONLY-NOT:   $L_fam{{[1-7]}}_
// ONLY-NOT:   shfl.sync.bfly

vdir.program @combine(%p: !vdir.buffer<6x64xf32>, %y: !vdir.buffer<1x64xbf16>) {
  %pt = vdir.load %p[0, 0] : !vdir.buffer<6x64xf32> -> !vdir.tile<6x64xf32>
  %yt = vdir.compute sum_rows(%pt) : (!vdir.tile<6x64xf32>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
