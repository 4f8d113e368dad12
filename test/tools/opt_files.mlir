// RUN: not vdir-opt /dev/zero -p vdir-pipeline 2>&1 | filecheck %s --check-prefix=DEVICE
// RUN: rm -rf %t.dir && mkdir %t.dir && not vdir-opt %t.dir 2>&1 | filecheck %s --check-prefix=FOLDER
// RUN: cp %s %t.txt && vdir-opt %t.txt | filecheck %s
// RUN: cp %s %t && vdir-opt %t | filecheck %s
// RUN: printf '\377\376' > %t.bin && not vdir-opt %t.bin 2>&1 | filecheck %s --check-prefix=BYTES

// The files vdir-opt reads: a program that is not a regular file (a device,
// which may never end; a folder) is refused unread, with the same one-line
// errors as vdir-run's; a regular file is read as MLIR text whatever its name
// ends in, or without an extension, as mlir-opt reads it; one that is not
// UTF-8 text is a located error.

// DEVICE:     /dev/zero: error: not a regular file; name the program's IR file (- reads standard input)
// DEVICE-NOT: Traceback
// FOLDER:     opt_files.mlir.tmp.dir: error: is a directory, not an IR file
// BYTES:      opt_files.mlir.tmp.bin: error: the input is not UTF-8 text
// CHECK:      vdir.program @copy

vdir.program @copy(%x: !vdir.buffer<1x16xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
