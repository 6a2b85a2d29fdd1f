//go:build !linux

package yield

// Batch does nothing outside Linux.
func Batch() (restore func()) { return func() {} }

// Exempt does nothing outside Linux.
func Exempt() (done func()) { return func() {} }

// Ahead does nothing outside Linux.
func Ahead(priority int) (restore func(), got string) { return func() {}, "none" }
