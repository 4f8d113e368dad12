// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s --check-prefix=ROTATE
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2 keep-trips=true}' | filecheck %s --check-prefix=KEEP

// A three-layer loop, each layer three 16-row gemv tiles over the row the
// layer before stored. Each layer is one phase of three tiles on two SMs.
// By default a tie goes to the SM least loaded over the whole program, so
// the SM that took two tiles of one layer takes one of the next (without
// the option, layer 1 has i=0 and i=2 on SM 1). With keep-trips every layer
// is placed as the first (i=0 and i=2 on SM 0, i=1 on SM 1, in every layer).

// ROTATE-LABEL: vdir.program @layers
// ROTATE-DAG:   vdir.load %w[0, 0] {{.*}}sm = 0{{[,>]}}
// ROTATE-DAG:   vdir.load %w[16, 0] {{.*}}sm = 1{{[,>]}}
// ROTATE-DAG:   vdir.load %w[32, 0] {{.*}}sm = 0{{[,>]}}
// ROTATE-DAG:   vdir.load %w[48, 0] {{.*}}sm = 1{{[,>]}}
// ROTATE-DAG:   vdir.load %w[64, 0] {{.*}}sm = 0{{[,>]}}
// ROTATE-DAG:   vdir.load %w[80, 0] {{.*}}sm = 1{{[,>]}}

// KEEP-LABEL: vdir.program @layers
// KEEP-DAG:   vdir.load %w[0, 0] {{.*}}sm = 0{{[,>]}}
// KEEP-DAG:   vdir.load %w[16, 0] {{.*}}sm = 1{{[,>]}}
// KEEP-DAG:   vdir.load %w[32, 0] {{.*}}sm = 0{{[,>]}}
// KEEP-DAG:   vdir.load %w[48, 0] {{.*}}sm = 0{{[,>]}}
// KEEP-DAG:   vdir.load %w[64, 0] {{.*}}sm = 1{{[,>]}}
// KEEP-DAG:   vdir.load %w[80, 0] {{.*}}sm = 0{{[,>]}}
// KEEP-DAG:   vdir.load %w[96, 0] {{.*}}sm = 0{{[,>]}}
// KEEP-DAG:   vdir.load %w[112, 0] {{.*}}sm = 1{{[,>]}}
// KEEP-DAG:   vdir.load %w[128, 0] {{.*}}sm = 0{{[,>]}}
vdir.program @layers(%h: !vdir.buffer<4x48xbf16>, %w: !vdir.buffer<144x48xbf16>) {
  vdir.repeat %l = 0 to 3 {
    %ht = vdir.load %h[%l, 0] : !vdir.buffer<4x48xbf16> -> !vdir.tile<1x48xbf16>
    %next = affine.apply affine_map<(d0) -> (d0 + 1)> (%l)
    vdir.repeat %i = 0 to 3 {
      %r = affine.apply affine_map<(d0, d1) -> (d0 * 48 + d1 * 16)> (%l, %i)
      %wt = vdir.load %w[%r, 0] : !vdir.buffer<144x48xbf16> -> !vdir.tile<16x48xbf16>
      %yt = vdir.compute gemv(%wt, %ht) : (!vdir.tile<16x48xbf16>, !vdir.tile<1x48xbf16>) -> !vdir.tile<1x16xbf16>
      %c = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
      %s = vdir.store %yt, %h[%next, %c] : !vdir.tile<1x16xbf16>, !vdir.buffer<4x48xbf16>
    }
  }
}
