//go:build !linux

package record

import "errors"

func readProcMem(int, uint64, []byte) (int, error) {
	return 0, errors.New("reading process memory is not supported here")
}
