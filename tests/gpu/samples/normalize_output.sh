#!/usr/bin/env bash
# normalize_output.sh: a cuda-sample's stdout with what legitimately differs from run to run taken
# out, for tests/gpu/samples/run_samples.sh's comparison of a native and an AgileOS run. Reads
# stdin, writes stdout. Only these changes are made, nothing else:
#
#   1. A line that reports a measurement is dropped: a number followed by a unit of time (s, sec,
#      seconds, ms, msec, us, usec, ns; "0.5ms", "12.3 msec") or a rate (anything per second:
#      GB/s, MB/s, GFlop/s, Gops/s, MOptions/s, Mkeys/s, "per second", ...), a FLOP rate
#      (GFLOPS, TFLOPS), a line that names a time or rate with a number ("Time = 1.2",
#      "Throughput = 3.4", "Bandwidth", "Elapsed", "Performance", "Speedup" as words, then a
#      number; "Runtime Version 13.0" is kept). Such a line can also carry a result
#      (matrixMul's "Performance= ..., Time= ..., Size= ... Ops"): its result is not compared; the
#      samples check their results themselves and print the pass/fail line, which is compared.
#   2. Hexadecimal numbers of 6 or more digits (addresses, handles: "0x7f3a2c000000") become 0xADDR.
#   3. Trailing white space and carriage returns are removed.
#
# What is not normalized: device names, properties, sizes, counts, error names, results and the
# pass/fail lines. run_samples.sh also ignores a line that differs between two native runs (it
# varies natively: a random seed, a thread's order); that is done there, by line position, not
# here, and the summary says how many lines that ignored.
# simpleStreams prints its timings in milliseconds without a unit ("4 streams:<TAB>1.29"): those
# four labels followed by a lone number are dropped too.
set -euo pipefail

time_unit='(s|sec|secs|second|seconds|ms|msec|msecs|millisecond|milliseconds|us|usec|usecs|microseconds|ns|nsec|nanoseconds)'
number='[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?'
sed -E \
  -e 's/\r$//' \
  -e 's/[[:space:]]+$//' \
  -e "/${number}[[:space:]]*${time_unit}([^A-Za-z]|$)/d" \
  -e '/[A-Za-z]+(\/| per )(s|sec|second)([^A-Za-z]|$)/d' \
  -e '/[GMTK](FLOP|Flop|flop|OP|Op)[sS]?([^A-Za-z]|$)/d' \
  -e "/(^|[^A-Za-z])([Tt]ime|TIME|[Tt]hroughput|[Bb]andwidth|[Ee]lapsed|[Pp]erformance|[Ss]peed ?up)([^A-Za-z]|$)[^0-9]*${number}/d" \
  -e "/^(memcopy|kernel|non-streamed|[0-9]+ streams):[[:space:]]+${number}\$/d" \
  -e 's/0x[0-9a-fA-F]{6,}/0xADDR/g'
