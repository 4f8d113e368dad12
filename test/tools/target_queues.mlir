// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t queues | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 stream-loads=false}' -t queues | filecheck %s --check-prefix=ONEQUEUE
// RUN: not vdir-opt %s -t queues 2>&1 | filecheck %s --check-prefix=UNENCODED

// -t queues: per SM and engine, the instructions a queue executes (its loop
// records expanded), the bytes moved, the cross-SM and bit waits and the
// releases; then least, mean, most and total over the SMs. Each SM loads 2 of the 4 row tiles (2 x 16 KiB) and
// the vector (2 KiB), and stores 2 results. Every load waits on nothing, so
// by default the row tiles run on the stream engine and the vector, small
// beside them, on the otherwise idle load engine; with stream-loads=false
// they all stay on the load engine (ONEQUEUE) and the stream engine gets no
// column.

vdir.program @rows(%w: !vdir.buffer<64x1024xbf16>, %x: !vdir.buffer<1x1024xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x1024xbf16> -> !vdir.tile<1x1024xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<64x1024xbf16> -> !vdir.tile<16x1024xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x1024xbf16>, !vdir.tile<1x1024xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}

// CHECK:      // @rows: 2 SMs, 14 encoded instructions, {{[0-9]+}} bytes of tiles per SM, 0 global counter(s)
// CHECK-NEXT: {{ +}}load{{ +}}|{{ +}}compute{{ +}}|{{ +}}store{{ +}}|{{ +}}stream{{ *$}}
// CHECK-NEXT: instrs{{ +}}MB{{ +}}x-SM{{ +}}bits{{ +}}rel |{{ +}}instrs{{ +}}x-SM{{ +}}bits{{ +}}rel |{{ +}}instrs{{ +}}MB{{ +}}x-SM{{ +}}bits{{ +}}rel |{{ +}}instrs{{ +}}MB{{ +}}x-SM{{ +}}bits{{ +}}rel
// CHECK-NEXT: sm 0{{ +}}1{{ +}}0.0{{ +}}0{{ +}}0{{ +}}0 |{{ +}}2{{ +}}0{{ +}}2{{ +}}0 |{{ +}}2{{ +}}0.0{{ +}}0{{ +}}2{{ +}}0 |{{ +}}2{{ +}}0.1{{ +}}0{{ +}}0{{ +}}0
// CHECK-NEXT: sm 1{{ +}}1{{ +}}0.0{{ +}}0{{ +}}0{{ +}}0 |{{ +}}2{{ +}}0{{ +}}2{{ +}}0 |{{ +}}2{{ +}}0.0{{ +}}0{{ +}}2{{ +}}0 |{{ +}}2{{ +}}0.1{{ +}}0{{ +}}0{{ +}}0
// CHECK-NEXT: least
// CHECK-NEXT: mean
// CHECK-NEXT: most
// CHECK-NEXT: total{{ +}}2{{ +}}0.0{{ +}}0{{ +}}0{{ +}}0 |{{ +}}4{{ +}}0{{ +}}4{{ +}}0 |{{ +}}4{{ +}}0.0{{ +}}0{{ +}}4{{ +}}0 |{{ +}}4{{ +}}0.1{{ +}}0{{ +}}0{{ +}}0

// ONEQUEUE:      // @rows: 2 SMs, 14 encoded instructions, {{[0-9]+}} bytes of tiles per SM, 0 global counter(s)
// ONEQUEUE-NEXT: {{ +}}load{{ +}}|{{ +}}compute{{ +}}|{{ +}}store{{ *$}}
// ONEQUEUE-NEXT: instrs{{ +}}MB{{ +}}x-SM{{ +}}bits{{ +}}rel |{{ +}}instrs{{ +}}x-SM{{ +}}bits{{ +}}rel |{{ +}}instrs{{ +}}MB
// ONEQUEUE-NEXT: sm 0{{ +}}3{{ +}}0.1{{ +}}0{{ +}}
// ONEQUEUE-NEXT: sm 1{{ +}}3{{ +}}0.1{{ +}}0{{ +}}
// ONEQUEUE-NEXT: least
// ONEQUEUE-NEXT: mean
// ONEQUEUE-NEXT: most
// ONEQUEUE-NEXT: total{{ +}}6{{ +}}0.1{{ +}}0{{ +}}{{[0-9]+}}{{ +}}0 |{{ +}}4{{ +}}0{{ +}}

// UNENCODED: error: -t queues needs an encoded program; run '-p vdir-pipeline' first
