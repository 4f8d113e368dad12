// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t 'ptx{uniform-checks=true}' | filecheck %s --check-prefix=CHECKED

// From five families on (DISPATCH_TABLE_FAMILIES), the compute engine
// dispatches on the family opcode (word 0 bits 8..15) through a table rather
// than a compare-and-branch per family: an opcode past the largest the
// program uses goes to the unknown-family report (error code 2), every other
// indexes a .branchtargets list by opcode, in which the opcodes the program
// does not use name the report too. The bodies follow in opcode order. This
// program uses gemv (1), rmsnorm (2), silu_mul (3), add (4) and sum_rows (8);
// dispatch.mlir has the chain of four.

// CHECK:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK-NOT:  setp.eq.u32 {{%p[0-9]+}}, [[FAM]],
// CHECK:      setp.gt.u32 [[PAST:%p[0-9]+]], [[FAM]], 8;
// CHECK-NEXT: @[[PAST]] bra.uni $L_fam_unknown_0;
// CHECK-NEXT: $L_fam_table_0: .branchtargets $L_fam_unknown_0, $L_fam1_0, $L_fam2_0, $L_fam3_0, $L_fam4_0, $L_fam_unknown_0, $L_fam_unknown_0, $L_fam_unknown_0, $L_fam8_0;
// CHECK-NEXT: brx.idx.uni [[FAM]], $L_fam_table_0;
// CHECK-NEXT: $L_fam_unknown_0:
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;
// CHECK:      bra.uni $L_cp_done_0;
// CHECK-NEXT: $L_fam1_0:
// CHECK:      $L_fam2_0:
// CHECK:      $L_fam3_0:
// CHECK:      $L_fam4_0:
// CHECK:      $L_fam8_0:
// CHECK:      bra.uni $L_cp_body_done_0;
// CHECK-NEXT: $L_cp_not_run_0:
// CHECK-NEXT: @{{%p[0-9]+}} bra.uni $L_cp_done_0;
// CHECK-NEXT: $L_cp_body_done_0:

// With the uniform branches checked, the indexed branch is a plain brx.idx
// (the bound's branch before it is checked).
// CHECKED:      brx.idx {{%r[0-9]+}}, $L_fam_table_0;

vdir.program @five(%h: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %wg: !vdir.buffer<64x64xbf16>, %wu: !vdir.buffer<64x64xbf16>, %wd: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>, %p: !vdir.buffer<6x64xf32>, %y: !vdir.buffer<1x64xbf16>) {
  %x = vdir.load %h[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %xn = vdir.compute rmsnorm(%x, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %wgt = vdir.load %wg[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %gate = vdir.compute gemv(%wgt, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %wut = vdir.load %wu[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %up = vdir.compute gemv(%wut, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %a = vdir.compute silu_mul(%gate, %up) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %wdt = vdir.load %wd[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %d = vdir.compute gemv(%wdt, %a) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %o = vdir.compute add(%d, %x) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %t = vdir.store %o, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %pt = vdir.load %p[0, 0] : !vdir.buffer<6x64xf32> -> !vdir.tile<6x64xf32>
  %s = vdir.compute sum_rows(%pt) : (!vdir.tile<6x64xf32>) -> !vdir.tile<1x64xbf16>
  %t2 = vdir.store %s, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
