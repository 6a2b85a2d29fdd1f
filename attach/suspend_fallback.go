package attach

import "errors"

// ErrNoETWEvents says an ETW session started but delivered no events (as
// under Wine, whose StartTraceW is a stub that succeeds): the ETW backend
// returns it, wrapped, and the default backend falls back to suspend.
var ErrNoETWEvents = errors.New("the ETW session delivered no events")

// etwUnavailable reports whether an ETW backend error means "use the
// suspend backend instead": ETW denied, or silent.
func etwUnavailable(err error) bool {
	return errors.Is(err, ErrPermission) || errors.Is(err, ErrNoETWEvents) || errors.Is(err, ErrUnsupported)
}
