// Package suspend is the Windows backend that needs no privilege: each
// tick it suspends each thread of the targets that ran, reads its
// registers and a copy of its stack, resumes it, and unwinds the copy
// with the modules' .pdata. The sampler's logic (sampler.go) runs over a
// small interface to the Win32 calls, so it is tested on every OS; the
// calls themselves are in the Windows-only files. It registers itself
// with attach as "suspend" on Windows, after etw; package attach/backends
// links it in.
package suspend
