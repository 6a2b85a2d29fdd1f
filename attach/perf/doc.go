// Package perf is the Linux perf_event_open backend: one sampling event
// per CPU for each target task, inherited by the threads and processes it
// creates, read from one ring per CPU and decoded into the neutral events
// by package perfrecord, as perf.data files are (see perf.go). A launched
// command, where gprof may, runs instead in a cgroup of its own and is
// sampled by per-CPU events kept to that cgroup, whose interval a pacer
// per CPU varies so that no program loops in step with it (cgroup.go,
// pace.go). It is Linux's first backend; where perf events are denied,
// Auto falls back to attach/ptrace. It registers itself with attach as
// "perf"; package attach/backends links it in.
package perf
