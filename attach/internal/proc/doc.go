// Package proc holds what gprof's Linux backends (attach/perf and
// attach/ptrace) and attach's target checks read of /proc and /sys, and
// the launcher that starts a command blocked before its exec, so that
// sampling is armed before its first instruction (launch.go). It knows
// nothing of attach's events, so that attach itself may use it.
package proc
