// Package winproc launches a command for the Windows backends
// (attach/etw and attach/suspend): created suspended, so that sampling can
// start before it runs, in a job object that ends it with gprof.
package winproc
