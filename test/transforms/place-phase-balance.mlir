// RUN: vdir-opt %s -p 'vdir-place{num-sms=2 phase-balance=false}' | filecheck %s --check-prefix=TOTAL
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s --check-prefix=PHASE

// Two phases: three 16-row tiles of the gemv over %w, then, after the
// hand-off through %y, two small tiles of the gemv over %v. Balancing the
// program's total puts both tiles of the second phase on SM 1 (still behind
// SM 0 after the first), so that phase takes two tiles' time; balancing each
// phase gives each SM one, the program's total choosing SM 1 first.

// TOTAL-LABEL: vdir.program @two_phases
// TOTAL-DAG:   vdir.load %w[0, 0] {{.*}}sm = 0{{[,>]}}
// TOTAL-DAG:   vdir.load %w[16, 0] {{.*}}sm = 1{{[,>]}}
// TOTAL-DAG:   vdir.load %w[32, 0] {{.*}}sm = 0{{[,>]}}
// TOTAL-DAG:   vdir.load %v[0, 0] {{.*}}sm = 1{{[,>]}}
// TOTAL-DAG:   vdir.load %v[16, 0] {{.*}}sm = 1{{[,>]}}

// PHASE-LABEL: vdir.program @two_phases
// PHASE-DAG:   vdir.load %w[0, 0] {{.*}}sm = 0{{[,>]}}
// PHASE-DAG:   vdir.load %w[16, 0] {{.*}}sm = 1{{[,>]}}
// PHASE-DAG:   vdir.load %w[32, 0] {{.*}}sm = 0{{[,>]}}
// PHASE-DAG:   vdir.load %v[0, 0] {{.*}}sm = 1{{[,>]}}
// PHASE-DAG:   vdir.load %v[16, 0] {{.*}}sm = 0{{[,>]}}
vdir.program @two_phases(%w: !vdir.buffer<48x256xbf16>, %x: !vdir.buffer<1x256xbf16>, %y: !vdir.buffer<1x48xbf16>,
                         %v: !vdir.buffer<32x48xbf16>, %z: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  vdir.repeat %i = 0 to 3 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%i)
    %wt = vdir.load %w[%r, 0] : !vdir.buffer<48x256xbf16> -> !vdir.tile<16x256xbf16>
    %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %yt, %y[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x48xbf16>
  }
  %ya = vdir.load %y[0, 0] : !vdir.buffer<1x48xbf16> -> !vdir.tile<1x48xbf16>
  vdir.repeat %j = 0 to 2 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%j)
    %vt = vdir.load %v[%r, 0] : !vdir.buffer<32x48xbf16> -> !vdir.tile<16x48xbf16>
    %zt = vdir.compute gemv(%vt, %ya) : (!vdir.tile<16x48xbf16>, !vdir.tile<1x48xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %zt, %z[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x32xbf16>
  }
}
