//go:build !linux

package unwind

import "errors"

func ownVDSO() ([]byte, error) { return nil, errors.New("vdso unwinding is Linux-only") }
