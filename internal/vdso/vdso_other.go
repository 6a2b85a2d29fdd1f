//go:build !linux

package vdso

import "errors"

// Image returns an error: only Linux has a vdso gprof can read.
func Image() ([]byte, error) { return nil, errors.New("vdso: Linux-only") }
