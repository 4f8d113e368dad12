// RUN: not vdir-run %s --backend sim --load-window 0 2>&1 | filecheck %s
// RUN: vdir-run %s --backend sim --load-window 1 --check | filecheck %s --check-prefix=ONE

// --load-window is a launch option of the simulator: checked (with its
// type and least value) before the program runs, one line, exit 1.

// CHECK: error: launch option 'load_window' must be at least 1, got 0
// ONE:   check passed

vdir.program @copy(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
