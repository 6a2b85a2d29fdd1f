// Package procmaps reads a Linux process's executable mappings from
// /proc/PID/maps as event.Map events, for attach/perf and attach/ptrace,
// and keys them so that each is reported once.
package procmaps
