//go:build !unix

package cmd

import (
	"errors"
	"os"
)

// openInherited: passing descriptors to --control is a Unix way of doing
// things.
func openInherited(fd int, how string) (*os.File, error) {
	return nil, errors.New("not supported on this platform")
}
