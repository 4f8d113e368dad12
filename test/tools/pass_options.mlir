// Numeric pass options out of range, and unknown options, are one-line errors
// naming the option as spelled on the command line; nothing reaches stdout.

// RUN: not vdir-opt %s -p 'vdir-place{num-sms=0}' 2>&1 | filecheck %s --check-prefix=PLACE
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=0}' 2>&1 | filecheck %s --check-prefix=PIPE-SMS
// RUN: not vdir-opt %s -p 'vdir-pipeline{prefetch=-3}' 2>&1 | filecheck %s --check-prefix=PIPE-PREFETCH
// RUN: not vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule{prefetch=-1}' 2>&1 | filecheck %s --check-prefix=SCHED
// RUN: not vdir-opt %s -p 'vdir-fuse{minbenefit=1.0}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: vdir-opt %s -p 'vdir-place{num-sms=2}' | filecheck %s --check-prefix=OK

// An option given twice to one pass (xDSL's parser would keep the last
// value; num-sms and num_sms are one option), or to the target, is one line.

// RUN: not vdir-opt %s -p 'vdir-place{num-sms=2 num-sms=4}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not vdir-opt %s -p 'vdir-fuse,vdir-pipeline{num-sms=2 prefetch=1 num_sms=1}' 2>&1 | filecheck %s --check-prefix=TWICE-SPELLINGS
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=2}' -t 'ptx{load-path=lsu load-path=bulk}' 2>&1 | filecheck %s --check-prefix=TWICE-TARGET
// RUN: vdir-opt %s -p 'vdir-fuse{only=merge-loads,gemv-add},vdir-place{num-sms=2}' | filecheck %s --check-prefix=OK

// An option of vdir's passes given without a value (xDSL would leave it at its
// default, or refuse a flag with a message about Python types) is one line.

// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms}' 2>&1 | filecheck %s --check-prefix=BARE
// RUN: not vdir-opt %s -p 'vdir-place{num-sms=2},vdir-schedule{prefetch}' 2>&1 | filecheck %s --check-prefix=BARE-SCHED
// RUN: not vdir-opt %s -p 'vdir-pipeline{release-first}' 2>&1 | filecheck %s --check-prefix=BARE-FLAG

// BARE: {{^}}error: bad pass pipeline 'vdir-pipeline{num-sms}': vdir-pipeline: option 'num-sms' needs a value (num-sms=...){{$}}
// BARE-NOT: {{.}}
// BARE-SCHED: {{^}}error: bad pass pipeline '{{.*}}': vdir-schedule: option 'prefetch' needs a value (prefetch=...){{$}}
// BARE-FLAG: {{^}}error: bad pass pipeline '{{.*}}': vdir-pipeline: option 'release-first' needs a value (release-first=true or false){{$}}

// PLACE: error: vdir-place: option 'num-sms' must be at least 1, got 0
// PLACE-NOT: {{.}}
// PIPE-SMS: error: vdir-pipeline: option 'num-sms' must be at least 1, got 0
// PIPE-PREFETCH: error: vdir-pipeline: option 'prefetch' must be at least 0, got -3
// SCHED: error: vdir-schedule: option 'prefetch' must be at least 0, got -1
// UNKNOWN: error: bad pass pipeline 'vdir-fuse{minbenefit=1.0}': Provided arguments ["minbenefit"] not found in expected arguments ["min-benefit", "only"]
// TWICE: {{^}}error: bad pass pipeline 'vdir-place{num-sms=2 num-sms=4}': option 'num-sms' of vdir-place is given twice{{$}}
// TWICE-NOT: {{.}}
// TWICE-SPELLINGS: {{^}}error: bad pass pipeline '{{.*}}': option 'num-sms' of vdir-pipeline is given twice{{$}}
// TWICE-TARGET: {{^}}error: bad target 'ptx{load-path=lsu load-path=bulk}': option 'load-path' of ptx is given twice{{$}}
// OK: vdir.program

vdir.program @p(%x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %t = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %s = vdir.store %t, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
