package format

import (
	"os"

	"github.com/gprof-dev/gprof/format/gecko"
	"github.com/gprof-dev/gprof/format/pprof"
	"github.com/gprof-dev/gprof/format/processed"
	"github.com/gprof-dev/gprof/profile"
)

// WriteFile writes p to path in kind (Gecko unless Processed or PProf):
// "-" is standard output, uncompressed (pprof is always gzipped); a
// regular file is replaced atomically, gzipped when its name ends in .gz.
func WriteFile(path string, p *profile.Profile, kind Kind) error {
	if path == "-" {
		switch kind {
		case Processed:
			return processed.Write(os.Stdout, p)
		case PProf:
			return pprof.Write(os.Stdout, p)
		}
		return gecko.Write(os.Stdout, p)
	}
	switch kind {
	case Processed:
		return processed.WriteFile(path, p)
	case PProf:
		return pprof.WriteFile(path, p)
	}
	return gecko.WriteFile(path, p)
}
