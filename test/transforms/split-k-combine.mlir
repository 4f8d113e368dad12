// RUN: vdir-opt %s -p 'vdir-place{num-sms=4},vdir-schedule,vdir-alloc-smem,vdir-layout-deps' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=4}' -t isa | filecheck %s --check-prefix=ISA

// A two-phase reduction across SMs (a split-K gemv, K in 4 chunks). Each
// chunk's f32 partial is computed on its own SM and stored to a row of
// %partials; the combine loads all 4 rows after every store (the RAW group
// becomes global counter 0, released once by each store, and the load waits
// for 4), then sum_rows adds the rows in order and rounds once to bf16.

vdir.program @split_k_gemv(%w: !vdir.buffer<64x512xbf16>, %x: !vdir.buffer<1x512xbf16>, %partials: !vdir.buffer<4x64xf32>, %y: !vdir.buffer<1x64xbf16>) {
  vdir.repeat %s = 0 to 4 {
    %k = affine.apply affine_map<(d0) -> ((d0 * 128))> (%s)
    %xs = vdir.load %x[0, %k] : !vdir.buffer<1x512xbf16> -> !vdir.tile<1x128xbf16>
    %wt = vdir.load %w[0, %k] : !vdir.buffer<64x512xbf16> -> !vdir.tile<64x128xbf16>
    %pt = vdir.compute gemv(%wt, %xs) : (!vdir.tile<64x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x64xf32>
    %stored = vdir.store %pt, %partials[%s, 0] : !vdir.tile<1x64xf32>, !vdir.buffer<4x64xf32>
  }
  %parts = vdir.load %partials[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x64xf32>
  %yt = vdir.compute sum_rows(%parts) : (!vdir.tile<4x64xf32>) -> !vdir.tile<1x64xbf16>
  %done = vdir.store %yt, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// CHECK-LABEL: vdir.program @split_k_gemv
// CHECK-SAME:    counter_counts = [4], buffer_roles = [in, in, out, out]
// CHECK:       vdir.store %pt, %partials[0, 0] {{.*}}sm = 0,{{.*}}release = [0]>}
// CHECK:       %parts = vdir.load %partials[0, 0] {{.*}}sm = 0,{{.*}}wait_counters = [0 : 4],
// CHECK:       vdir.compute sum_rows(%parts) {{.*}}sm = 0,
// CHECK:       vdir.store %pt_1, %partials[1, 0] {{.*}}sm = 1,{{.*}}release = [0]>}
// CHECK:       vdir.store %pt_2, %partials[2, 0] {{.*}}sm = 2,{{.*}}release = [0]>}
// CHECK:       vdir.store %pt_3, %partials[3, 0] {{.*}}sm = 3,{{.*}}release = [0]>}

// The encoded form: sum_rows has its own family opcode; its words say
// P = 4 rows of C = 64 columns and a bf16 result (flags 0).
// ISA:         // buffer 2: partials 4x64 f32 (out)
// ISA-LABEL:   sm 0 load:
// ISA:         load  @partials+0 [4 x 256B, stride 256] {{.*}} wait(c0>=4*epoch) signal(b2)  // %parts
// ISA-LABEL:   sm 0 compute:
// ISA:         sum_rows(smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(4, 64, 0) wait(b2=1)
// ISA-LABEL:   sm 0 store:
// ISA-NEXT:    store {{.*}} -> @partials+0 {{.*}} release(c0)
// ISA-LABEL:   sm 1 store:
// ISA-NEXT:    store {{.*}} -> @partials+256 {{.*}} release(c0)
// ISA-LABEL:   sm 2 store:
// ISA-NEXT:    store {{.*}} -> @partials+512 {{.*}} release(c0)
// ISA-LABEL:   sm 3 store:
// ISA-NEXT:    store {{.*}} -> @partials+768 {{.*}} release(c0)
