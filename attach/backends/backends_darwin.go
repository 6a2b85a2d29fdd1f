package backends

import _ "github.com/gprof-dev/gprof/attach/mach"
