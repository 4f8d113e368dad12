// Without a diagnostics flag, vdir-opt prints one located line on stderr,
// nothing on stdout, and exits non-zero.

// RUN: not vdir-opt %s > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=ERR --match-full-lines < %t.err
// RUN: filecheck %s --check-prefix=OUT --allow-empty < %t.out

vdir.program @p(%a: !vdir.buffer<16x64xbf16>) {
  %t = vdir.load %a[12, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<8x64xbf16>
  %s = vdir.store %t, %a[0, 0] : !vdir.tile<8x64xbf16>, !vdir.buffer<16x64xbf16>
}

// ERR: {{.*}}driver_error_exit.mlir:9:3: error: load: region rows [12, 20) are out of the buffer's bounds [0, 16)
// ERR-NOT: {{.}}
// OUT-NOT: {{.}}
