package backends

import (
	_ "github.com/gprof-dev/gprof/attach/perf"
	_ "github.com/gprof-dev/gprof/attach/ptrace"
)
