package backends

import (
	_ "github.com/gprof-dev/gprof/attach/etw"
	_ "github.com/gprof-dev/gprof/attach/suspend"
)
