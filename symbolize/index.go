package symbolize

import "io"

// index is everything Lookup needs, built once per binary.
type index struct {
	debugFile io.Closer // separate debug file, if one was found
}
