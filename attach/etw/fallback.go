package etw

import (
	"errors"

	"github.com/gprof-dev/gprof/attach"
)

// ErrNoEvents says an ETW session started but delivered no events (as
// under Wine, whose StartTraceW is a stub that succeeds): the ETW backend
// returns it, wrapped, and the default backend falls back to suspend.
var ErrNoEvents = errors.New("the ETW session delivered no events")

// etwUnavailable reports whether an ETW backend error means "use the
// suspend backend instead": ETW denied, or silent.
func etwUnavailable(err error) bool {
	return errors.Is(err, attach.ErrPermission) || errors.Is(err, ErrNoEvents) || errors.Is(err, attach.ErrUnsupported)
}
