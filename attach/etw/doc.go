// Package etw is the Windows ETW live backend: a private real-time kernel
// session with process, thread, image and profile events and stack walks
// on samples (live_windows.go), whose events are decoded by package
// github.com/gprof-dev/gprof/etwevent and translated into the neutral
// events by package github.com/gprof-dev/gprof/etw/translate (tested on
// every OS by replaying a real trace), the one translation ETL files go
// through too.
// It registers itself with attach as "etw" on Windows, before suspend,
// which Auto falls back to where ETW is denied or silent; package
// attach/backends links it in.
package etw
