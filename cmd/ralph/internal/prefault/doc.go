// Package prefault maps the ralph binary's code and read-only data into the
// process with one system call, and its data with another, before any
// other package of ralph's or its dependencies initialises. Its subpackage
// heap does the same, in the background, for the Go heap's next pages.
// main imports both, for that effect only.
//
// A command like `ralph status` lives for 15-20 ms, and on the virtual
// machines ralph's benchmarks run on (2-core PVM guests) a page fault is
// dear: 12.8 µs for a page of memory, against 7.5 µs a page when one
// madvise(MADV_POPULATE_WRITE) fills a range, and about 1.8 µs a page of
// the binary touched one by one, against 0.18 µs when
// madvise(MADV_POPULATE_READ) maps them all (3,480 pages: 6.3 ms against
// 0.63 ms). status took about 660 faults, 110 of them on the binary's
// code, 60 on its data and 400 on the heap. The two packages take 3-4 ms
// (20%) off status and 3 ms off --version for a binary built hours
// before, 4-11% for one just built, side by side in turns;
// docs/benchmarks.md has the figures and BenchmarkPrefault measures them.
//
// This package imports nothing but unsafe, so it comes among the first in
// Go's initialisation order (packages sorted by import path, each once its
// imports are done): after the runtime's own, ahead of os and of every
// module ralph uses. Its system call is a raw one, in assembly, for the
// same reason: package syscall initialises later. Mapping the whole code
// takes about 0.6 ms of the start, and pays when the binary's file sits in
// the page cache in small pieces (a copy, a machine up for a while): alone,
// it has measured from 1.5 ms faster to no change (a binary the linker had
// just written, which faults less to begin with). The
// data (about 50 pages, which the inits write to) is copied at once, as
// the writes would: 0.8-1.2 ms faster.
//
// A supervisor (ralph's program run with SuperviseArg, to contain an
// agent: coordinator/proc) is left to fault in what little of the binary
// it runs: the package reads the process's arguments from
// /proc/self/cmdline first, with raw system calls too.
//
// It does its work on linux/amd64 only, and only on Linux 5.14 or later
// (older kernels refuse the advice, and nothing changes). Elsewhere, and in
// builds with the tag ralph_noprefault (the benchmark's "before"), both
// packages are empty.
package prefault
