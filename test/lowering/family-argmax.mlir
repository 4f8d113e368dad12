// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s

// argmax_partial (family 13) and argmax_final (family 14) reduce u64 ranks:
// the value's order key (from its bits: 0x80000000 +- |x|, every NaN
// 0xFFFFFFFF) above the inverted index, so max.u64 picks the largest value
// and, of equal ones, the lowest index. Each thread keeps its running
// maximum, the warp combines it with butterfly shuffles of both halves,
// lane 0 leaves the warp's rank in the scratch (8 bytes a warp), and after
// the group barrier every thread takes the maximum of the warps' ranks.
// Thread 0 writes the result row.

// CHECK-LABEL: $L_fam13_0:
// CHECK:       @{{%p[0-9]+}} bra $L_argmax_partial_in_f32_0;
// CHECK-NEXT:  mov.u64 [[BEST:%rd[0-9]+]], 0;
// CHECK:       $L_argmax_partial_bf16_0:
// CHECK:       ld.shared.b16 [[H:%h[0-9]+]]
// CHECK-NEXT:  cvt.u32.u16 [[W:%r[0-9]+]], [[H]];
// CHECK-NEXT:  shl.b32 [[BITS:%r[0-9]+]], [[W]], 16;
// CHECK-NEXT:  not.b32 [[NOTI:%r[0-9]+]], {{%r[0-9]+}};
// CHECK-NEXT:  and.b32 [[MAG:%r[0-9]+]], [[BITS]], 2147483647;
// CHECK-NEXT:  setp.lt.s32 [[NEG:%p[0-9]+]], [[BITS]], 0;
// CHECK-NEXT:  sub.u32 [[LO:%r[0-9]+]], 2147483648, [[MAG]];
// CHECK-NEXT:  add.u32 [[HI:%r[0-9]+]], [[MAG]], 2147483648;
// CHECK-NEXT:  selp.b32 [[KEY:%r[0-9]+]], [[LO]], [[HI]], [[NEG]];
// CHECK-NEXT:  setp.gt.u32 [[NAN:%p[0-9]+]], [[MAG]], 2139095040;
// CHECK-NEXT:  selp.b32 [[NKEY:%r[0-9]+]], 4294967295, [[KEY]], [[NAN]];
// CHECK-NEXT:  mov.b64 [[RANK:%rd[0-9]+]], {[[NOTI]], [[NKEY]]};
// CHECK-NEXT:  max.u64 [[BEST]], [[BEST]], [[RANK]];
// CHECK:       $L_argmax_partial_bf16_end_0:
// CHECK-COUNT-10: shfl.sync.bfly.b32
// CHECK:       st.shared.u64 [{{%r[0-9]+}}+256]
// CHECK-NEXT:  barrier.sync 1, 256;
// CHECK-COUNT-8: ld.shared.u64
// CHECK:       ld.shared.b16
// CHECK:       cvt.rn.f32.u32
// CHECK:       st.shared.f32 [{{%r[0-9]+}}+4]
// CHECK:       st.shared.b32 [{{%r[0-9]+}}+12], 0;
// CHECK-NEXT:  bra.uni $L_argmax_partial_done_0;
// CHECK-NEXT:  $L_argmax_partial_in_f32_0:
// CHECK:       $L_argmax_partial_f32_0:
// CHECK:       ld.shared.b32
// CHECK:       $L_argmax_partial_f32_end_0:
// CHECK-COUNT-10: shfl.sync.bfly.b32
// CHECK:       barrier.sync 1, 256;
// CHECK:       st.shared.b32 [{{%r[0-9]+}}+12], 0;
// CHECK-NEXT:  $L_argmax_partial_done_0:

// CHECK-LABEL: $L_fam14_0:
// CHECK:       $L_argmax_final_0:
// CHECK:       ld.shared.b32
// CHECK-NEXT:  ld.shared.f32 [[IDXF:%f[0-9]+]], [{{%r[0-9]+}}+4];
// CHECK-NEXT:  cvt.rzi.u32.f32 [[IDX:%r[0-9]+]], [[IDXF]];
// CHECK-NEXT:  min.u32 {{%r[0-9]+}}, [[IDX]], 16777216;
// CHECK:       max.u64
// CHECK:       $L_argmax_final_end_0:
// CHECK-COUNT-10: shfl.sync.bfly.b32
// CHECK:       barrier.sync 1, 256;
// CHECK:       not.b32
// CHECK:       st.shared.b32 [{{%r[0-9]+}}+12], 0;

vdir.program @argmax(%x: !vdir.buffer<1x1000xbf16>, %parts: !vdir.buffer<2x4xf32>, %tok: !vdir.buffer<1x4xi32>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x1000xbf16> -> !vdir.tile<1x1000xbf16>
  %p = vdir.compute argmax_partial(%xt) {base = 0 : i64} : (!vdir.tile<1x1000xbf16>) -> !vdir.tile<1x4xf32>
  %s0 = vdir.store %p, %parts[0, 0] : !vdir.tile<1x4xf32>, !vdir.buffer<2x4xf32>
  %all = vdir.load %parts[0, 0] : !vdir.buffer<2x4xf32> -> !vdir.tile<2x4xf32>
  %t = vdir.compute argmax_final(%all) {stride = 0 : i64} : (!vdir.tile<2x4xf32>) -> !vdir.tile<1x4xi32>
  %s1 = vdir.store %t, %tok[0, 0] : !vdir.tile<1x4xi32>, !vdir.buffer<1x4xi32>
}
