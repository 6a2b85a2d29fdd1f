// Package ptrace is the Linux backend for where perf events are denied:
// each tick it seizes every running thread of the targets, reads its
// registers and a copy of its stack, and detaches again (see ptrace.go).
// It registers itself with attach as "ptrace", after perf; package
// attach/backends links it in.
package ptrace
