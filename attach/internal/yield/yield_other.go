//go:build !linux

package yield

// Batch does nothing outside Linux.
func Batch() (restore func()) { return func() {} }

// Exempt does nothing outside Linux.
func Exempt() (done func()) { return func() {} }
