package attach

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Events beyond CPU time: the sampling events a recording may ask for, in
// perf's names and syntax (perf-list(1), perf-record(1)), parsed here so
// that a command line is checked before anything starts, on any platform.
// What an event becomes in the kernel (an attr, a tracepoint's id, a probe)
// is the perf backend's business (attach/perf).

// EventKind says what kind of event an EventSpec names.
type EventKind int

const (
	// KindClock is cpu-clock or task-clock: a timer that counts the CPU
	// time of the thread it samples.
	KindClock EventKind = iota
	// KindSoftware is one of the kernel's software counters
	// (page-faults, context-switches...).
	KindSoftware
	// KindHardware is a counter of the CPU's performance monitoring unit
	// (cycles, instructions...); there is none in most VMs.
	KindHardware
	// KindTracepoint is a static tracepoint, "system:name"
	// (sched:sched_switch, syscalls:sys_enter_openat), or a probe made
	// earlier with perf probe ("probe:name").
	KindTracepoint
	// KindKprobe is a probe on a kernel function, made for the
	// recording: "probe:FUNC", or "probe:FUNC__return" at its return.
	KindKprobe
	// KindUprobe is a probe on a function of a binary, made for the
	// recording: "probe_BIN:FUNC".
	KindUprobe
	// KindUSDT is a statically defined probe of a binary (its
	// .note.stapsdt notes): "sdt_PROVIDER:NAME".
	KindUSDT
)

// An EventSpec is one event to sample.
type EventSpec struct {
	// Name is the event as perf names it: "cpu-clock", "page-faults",
	// "sched:sched_switch", "probe:do_sys_openat2", "probe_libc:malloc",
	// "sdt_myapp:tick". It names the event's samples in the profile.
	Name string
	Kind EventKind
	// Config is the software or hardware counter's number (enum
	// perf_sw_ids, perf_hw_id) for KindClock, KindSoftware and
	// KindHardware.
	Config uint64
	// Period samples every Period events (for a clock, every Period ns
	// of CPU time); Freq instead asks the kernel to adapt the period to
	// about Freq samples a second. Both 0: the default, which for a
	// clock is Options.Interval, for a tracepoint or probe every hit
	// (period 1, as perf), and for other counters Options.Interval's
	// rate in frequency mode (perf's -F).
	Period, Freq uint64
	// User and Kernel restrict sampling to user or kernel mode (perf's
	// ":u" and ":k" modifiers); both false means both modes.
	User, Kernel bool

	// Probes: Binary is the file a uprobe or USDT probe is in (empty: to
	// be found, see ResolveProbes), Symbol the function (kprobe, uprobe)
	// or "provider:name" (USDT), Offset bytes past the function's start,
	// Return a probe at the function's return.
	Binary string
	Symbol string
	Offset uint64
	Return bool
}

// Counting reports whether the event counts something other than CPU time
// (so that a sample stands for Period occurrences, not for time).
func (e *EventSpec) Counting() bool { return e.Kind != KindClock }

// Traced reports whether the event's samples carry the fields of a
// tracepoint or probe hit (PERF_SAMPLE_RAW).
func (e *EventSpec) Traced() bool {
	return e.Kind == KindTracepoint || e.Kind == KindKprobe || e.Kind == KindUprobe || e.Kind == KindUSDT
}

// The counters perf names (tools/perf/util/parse-events.c's
// event_symbols_sw and event_symbols_hw), with the numbers of enum
// perf_sw_ids and enum perf_hw_id.
var (
	clockEvents = map[string]uint64{"cpu-clock": 0, "task-clock": 1}
	swEvents    = map[string]uint64{
		"page-faults": 2, "faults": 2,
		"context-switches": 3, "cs": 3,
		"cpu-migrations": 4, "migrations": 4,
		"minor-faults":     5,
		"major-faults":     6,
		"alignment-faults": 7,
		"emulation-faults": 8,
	}
	hwEvents = map[string]uint64{
		"cycles": 0, "cpu-cycles": 0,
		"instructions":        1,
		"cache-references":    2,
		"cache-misses":        3,
		"branch-instructions": 4, "branches": 4,
		"branch-misses":           5,
		"bus-cycles":              6,
		"stalled-cycles-frontend": 7, "idle-cycles-frontend": 7,
		"stalled-cycles-backend": 8, "idle-cycles-backend": 8,
		"ref-cycles": 9,
	}
	// canonical names for perf's aliases, so that a profile names an
	// event one way.
	aliases = map[string]string{"faults": "page-faults", "cs": "context-switches", "migrations": "cpu-migrations",
		"cpu-cycles": "cycles", "branches": "branch-instructions", "idle-cycles-frontend": "stalled-cycles-frontend",
		"idle-cycles-backend": "stalled-cycles-backend"}
)

// EventNames lists the counter names ParseEvents knows, for help and
// completion: clocks, then software, then hardware counters.
func EventNames() []string {
	var out []string
	for _, m := range []map[string]uint64{clockEvents, swEvents, hwEvents} {
		var names []string
		for n := range m {
			if _, alias := aliases[n]; !alias {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		out = append(out, names...)
	}
	return out
}

// ParseEvents reads a comma-separated list of events in perf's syntax:
// NAME[/TERMS/][:MODIFIERS], where NAME is a counter (cpu-clock,
// page-faults, cycles...), a tracepoint "system:name", a kprobe
// "probe:FUNC" ("probe:FUNC__return" at its return), a uprobe
// "probe_BIN:FUNC" or a USDT probe "sdt_PROVIDER:NAME"; TERMS are
// period=N and freq=N, comma-separated; MODIFIERS are u (user mode only)
// and k (kernel mode only), and p, which perf uses for precise hardware
// sampling and gprof accepts and ignores. The errors are one line each,
// saying what to type.
func ParseEvents(list string) ([]EventSpec, error) {
	if hasControl(list) {
		return nil, fmt.Errorf("event list %q has a control character: give names like cpu-clock,page-faults", list)
	}
	var out []EventSpec
	for _, one := range splitEvents(list) {
		one = strings.TrimSpace(one)
		if one == "" {
			continue
		}
		e, err := parseEvent(one)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o EventSpec) bool { return o.Name == e.Name }) {
			return nil, fmt.Errorf("event %s is given twice", e.Name)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no event given: name one, e.g. -e cpu-clock or -e page-faults")
	}
	return out, nil
}

// splitEvents splits at the commas that are not inside a /TERMS/ part.
func splitEvents(s string) []string {
	var parts []string
	inTerms := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/':
			inTerms = !inTerms
		case ',':
			if !inTerms {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func parseEvent(s string) (EventSpec, error) {
	name, terms, mods := s, "", ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		j := strings.LastIndexByte(s, '/')
		if j == i {
			return EventSpec{}, fmt.Errorf("event %q: its terms have no closing /: write e.g. %s/period=1000/", s, s[:i])
		}
		name, terms, mods = s[:i], s[i+1:j], s[j+1:]
		if mods != "" && mods[0] != ':' {
			return EventSpec{}, fmt.Errorf("event %q: %q after its terms is neither a modifier (:u, :k) nor a comma", s, mods)
		}
	}
	if terms == "" {
		// Modifiers follow the last colon, when it ends a name that is
		// a counter or a system:name tracepoint with the modifier after.
		if i := strings.LastIndexByte(name, ':'); i >= 0 && isModifiers(name[i+1:]) && (strings.Count(name, ":") == 2 || isCounter(name[:i])) {
			name, mods = name[:i], name[i:]
		}
	}
	mods = strings.TrimPrefix(mods, ":")
	e, err := eventByName(name)
	if err != nil {
		return e, err
	}
	for _, m := range mods {
		switch m {
		case 'u':
			e.User = true
		case 'k':
			e.Kernel = true
		case 'p', 'P':
		default:
			return e, fmt.Errorf("event %q: unknown modifier %q (gprof takes u, k and p)", s, m)
		}
	}
	if e.User && e.Kernel {
		e.User, e.Kernel = false, false // :uk is both modes, as perf
	}
	if terms != "" {
		for _, t := range strings.Split(terms, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(t), "=")
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if !ok || err != nil || n == 0 {
				return e, fmt.Errorf("event %q: term %q is not period=N or freq=N with N a positive whole number", s, t)
			}
			switch strings.TrimSpace(k) {
			case "period":
				e.Period, e.Freq = n, 0
			case "freq":
				e.Freq, e.Period = n, 0
			default:
				return e, fmt.Errorf("event %q: unknown term %q: gprof takes period=N and freq=N", s, k)
			}
		}
	}
	return e, nil
}

func isModifiers(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("ukpP", c) {
			return false
		}
	}
	return true
}

func isCounter(name string) bool {
	_, c := clockEvents[name]
	_, s := swEvents[name]
	_, h := hwEvents[name]
	return c || s || h
}

// eventByName makes the EventSpec of an event name without terms or
// modifiers.
func eventByName(name string) (EventSpec, error) {
	canon := name
	if a, ok := aliases[name]; ok {
		canon = a
	}
	if c, ok := clockEvents[name]; ok {
		return EventSpec{Name: canon, Kind: KindClock, Config: c}, nil
	}
	if c, ok := swEvents[name]; ok {
		return EventSpec{Name: canon, Kind: KindSoftware, Config: c}, nil
	}
	if c, ok := hwEvents[name]; ok {
		return EventSpec{Name: canon, Kind: KindHardware, Config: c}, nil
	}
	sys, ev, ok := strings.Cut(name, ":")
	if !ok {
		return EventSpec{}, unknownEvent(name)
	}
	if isCounter(sys) {
		return EventSpec{}, fmt.Errorf("event %q: unknown modifier %q (gprof takes u, k and p)", name, ev)
	}
	if !validTraceName(sys) || !validTraceName(ev) && !strings.HasPrefix(sys, "sdt_") {
		return EventSpec{}, fmt.Errorf("event %q: a tracepoint is SYSTEM:NAME in letters, digits and _ (as /sys/kernel/tracing/available_events lists them)", name)
	}
	switch {
	case sys == "probe":
		e := EventSpec{Name: name, Kind: KindKprobe, Symbol: ev}
		if f, ok := strings.CutSuffix(ev, "__return"); ok {
			e.Symbol, e.Return = f, true
		}
		return e, nil
	case strings.HasPrefix(sys, "probe_") && len(sys) > len("probe_"):
		e := EventSpec{Name: name, Kind: KindUprobe, Binary: strings.TrimPrefix(sys, "probe_"), Symbol: ev}
		if f, ok := strings.CutSuffix(ev, "__return"); ok {
			e.Symbol, e.Return = f, true
		}
		return e, nil
	case strings.HasPrefix(sys, "sdt_") && len(sys) > len("sdt_"):
		return EventSpec{Name: name, Kind: KindUSDT, Symbol: strings.TrimPrefix(sys, "sdt_") + ":" + ev}, nil
	}
	return EventSpec{Name: name, Kind: KindTracepoint}, nil
}

func validTraceName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// unknownEvent is the error for a name that is no event, with the nearest
// known name when there is one close enough to be a typo.
func unknownEvent(name string) error {
	best, bestD := "", 3
	for _, n := range EventNames() {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	hint := ""
	if best != "" {
		hint = fmt.Sprintf("did you mean %s? ", best)
	}
	return fmt.Errorf("unknown event %q: %sgive a counter (%s), a tracepoint SYSTEM:NAME (see /sys/kernel/tracing/available_events) or a probe (--probe)",
		name, hint, strings.Join(EventNames()[:7], ", ")+"...")
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ParseProbe reads a --probe: where to put a probe made for the
// recording, in perf probe's syntax (perf-probe(1)):
//
//	FUNC[+OFF][%return]           a kernel function (kprobe): probe:FUNC
//	BIN:FUNC[+OFF][%return]       a function of binary BIN (uprobe): probe_BIN:FUNC
//	BIN:sdt_PROVIDER:NAME         a USDT probe of BIN: sdt_PROVIDER:NAME
//	BIN:%PROVIDER:NAME            the same, as perf probe writes it
//
// BIN is a path, or a name looked up as ResolveProbes says. A probe at a
// return is named FUNC__return, as perf names it.
func ParseProbe(s string) (EventSpec, error) {
	if hasControl(s) {
		return EventSpec{}, fmt.Errorf("--probe %q has a control character", s)
	}
	orig := s
	bad := func(why string) (EventSpec, error) {
		return EventSpec{}, fmt.Errorf("--probe %q: %s: give FUNC (a kernel function), BIN:FUNC (a function of a binary) or BIN:sdt_PROVIDER:NAME (a USDT probe), with +OFFSET or %%return after a function if wanted", orig, why)
	}
	bin := ""
	if i := strings.IndexByte(s, ':'); i >= 0 {
		bin, s = s[:i], s[i+1:]
		if bin == "" {
			return bad("no binary before the colon")
		}
	}
	if bin != "" {
		if p, n, ok := strings.Cut(s, ":"); ok {
			p = strings.TrimPrefix(strings.TrimPrefix(p, "%"), "sdt_")
			if !validTraceName(p) || n == "" {
				return bad("a USDT probe is PROVIDER:NAME")
			}
			return EventSpec{Name: "sdt_" + p + ":" + n, Kind: KindUSDT, Binary: bin, Symbol: p + ":" + n}, nil
		}
	}
	e := EventSpec{Kind: KindKprobe}
	if bin != "" {
		e.Kind, e.Binary = KindUprobe, bin
	}
	if f, ok := strings.CutSuffix(s, "%return"); ok {
		s, e.Return = f, true
	}
	if f, off, ok := strings.Cut(s, "+"); ok {
		n, err := strconv.ParseUint(off, 0, 64)
		if err != nil {
			return bad("the offset after + is not a number")
		}
		s, e.Offset = f, n
	}
	if !validTraceName(s) && !validSymbol(s) {
		return bad("no function name")
	}
	e.Symbol = s
	event := eventNamePart(s)
	if e.Offset > 0 {
		event += "_" + strconv.FormatUint(e.Offset, 10)
	}
	if e.Return {
		event += "__return"
	}
	if e.Kind == KindKprobe {
		e.Name = "probe:" + event
	} else {
		e.Name = "probe_" + binGroup(bin) + ":" + event
	}
	return e, nil
}

// validSymbol accepts what a symbol table may hold beyond C identifiers
// (C++ and Rust names mangle to identifiers, but versioned names have a @
// or a .).
func validSymbol(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c == ':' || c == '%' || c == '+' || c == ',' || c == '/' {
			return false
		}
	}
	return true
}

// eventNamePart turns a symbol into what a tracepoint name may hold, as
// perf probe does: anything but letters, digits and _ becomes _.
func eventNamePart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// binGroup is perf probe's group name for probes in binary bin: its base
// name up to the first dot ("libc.so.6" is probe_libc).
func binGroup(bin string) string {
	base := filepath.Base(bin)
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return eventNamePart(base)
}

// hasControl reports whether s holds a control character, which no event
// name has (and which would break an error's one line).
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}
