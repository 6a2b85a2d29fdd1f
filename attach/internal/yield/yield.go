// Package yield keeps gprof's own threads from preempting the programs it
// records: while a recording runs, gprof's threads under the normal policy
// are put under SCHED_BATCH, which has the same share of the CPU but never
// preempts a running thread when it wakes.
//
// Why: a sampler that takes a busy thread's CPU away as it samples it
// stretches the gaps between that thread's samples in wall time. On a
// 2-CPU VM, gprof's decoding threads, woken as samples came in, often
// woke on the CPU of the 64 ms program it recorded and preempted it (the
// scheduler prefers a woken thread's last CPU when both are busy). Under
// SCHED_BATCH they wait for the program's time slice to end or for the
// other CPU, and keep up all the same: the longest gap between that
// program's samples in a run, median of 20 interleaved runs, went from
// 2.28 to 2.05 ms with the perf backend (runs with one over 2 ms: 13 to
// 10), and from 2.99 to 2.52 ms with ptrace (12 runs); beside two
// CPU-bound loops, where the program shares its CPU anyway, no change.
// gprof's real-time threads (ptrace's stoppers, the perf pacers and
// reader) set their own policy and are exempt, and a launched command
// starts under the policy gprof started with.
package yield
