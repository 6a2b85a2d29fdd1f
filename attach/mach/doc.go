// Package mach is the macOS backend: a timer samples every thread of the
// targets through their task ports, suspending each just long enough to
// read its registers and a copy of its stack, and walks the frame
// pointers over the copy (sampler.go). The sampler's logic and the Mach
// structures' layouts build and are tested on every OS; the live calls
// (libsystem_darwin.go, record_darwin.go) are macOS-only. It registers
// itself with attach as "mach" on macOS; package attach/backends links it
// in.
package mach
