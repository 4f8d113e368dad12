// RUN: vdir-run - --backend sim --check < %s | filecheck %s
// RUN: vdir-opt %s -p vdir-pipeline | vdir-run - --backend sim | filecheck %s --check-prefix=ENCODED
// RUN: sed 's/vdir.compute gemv/vdir.compute gemv gemv/' %s | not vdir-run - --backend sim 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: not vdir-run /dev/zero --backend sim 2>&1 | filecheck %s --check-prefix=DEVICE
// RUN: cp %s %t.mlir && not vdir-run %t.mlir --backend sim --trace %t.mlir 2>&1 | filecheck %s --check-prefix=SAME
// RUN: filecheck %s --input-file %t.mlir --check-prefix=INTACT
// RUN: rm -f %t.out %t.out.npz && vdir-run %s --backend sim --outputs %t.out && test -f %t.out && test ! -e %t.out.npz
// RUN: not vdir-run %s --backend sim --outputs '' 2>&1 | filecheck %s --check-prefix=EMPTY

// The files vdir-run reads and writes: `-` is standard input (as for
// vdir-opt; errors there are located in <stdin>); a program that is not a
// regular file is refused unread; an output onto the program (or onto
// --inputs' file, or the other output's) is refused before the run; --outputs
// writes the path named, adding no .npz; an empty path is an error.

// CHECK:      backend: sim
// CHECK:      check passed
// ENCODED:    y: 1x16 bf16
// STDIN:      <stdin>:{{[0-9]+}}:{{[0-9]+}}: error:
// STDIN-NOT:  Traceback
// DEVICE:     /dev/zero: error: not a regular file; name the program's IR file (- reads standard input)
// SAME:       run_files.mlir.tmp.mlir: error: --trace: is the program file; name another file to write
// INTACT:     vdir.program @gemv
// EMPTY:      error: --outputs: the path is empty; name the file

vdir.program @gemv(%w: !vdir.buffer<16x256xbf16>, %x: !vdir.buffer<1x256xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x256xbf16> -> !vdir.tile<1x256xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x256xbf16> -> !vdir.tile<16x256xbf16>
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x256xbf16>, !vdir.tile<1x256xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
