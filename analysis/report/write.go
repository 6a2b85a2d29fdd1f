package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// WriteJSON writes r as indented JSON. The schema is Report's: snake_case
// field names, durations in ns with an "_ns" suffix, percentages from 0 to
// 100, and a "version" field (Version) that changes only when a field is
// removed or changes meaning.
func WriteJSON(w io.Writer, r Report) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(r)
}

// WriteText writes r as plain, aligned text.
func WriteText(w io.Writer, r Report) error { return writeText(w, r, TextOptions{}) }

// WriteTextColor is WriteText with ANSI bold headings, for terminals.
func WriteTextColor(w io.Writer, r Report) error { return writeText(w, r, TextOptions{Color: true}) }

// TextOptions controls WriteTextOptions.
type TextOptions struct {
	Color bool // ANSI bold headings
	// Width truncates each line to this many columns, ending it in "…"
	// (a terminal's width); 0 keeps whole lines.
	Width int
	// Limit is how many threads get a section of their own and how many
	// processes the process table lists, busiest first; 0 means
	// DefaultLimit and a negative value all of them. Threads without
	// samples get no section unless All.
	Limit int
	// All prints every thread and process, those without samples too.
	All bool
}

// DefaultLimit is the number of threads and processes the text report
// details when TextOptions.Limit is 0: a recording of a build has
// hundreds, and a terminal user reads the busiest.
const DefaultLimit = 10

// WriteTextOptions writes r as text, as WriteText, with options.
func WriteTextOptions(w io.Writer, r Report, o TextOptions) error { return writeText(w, r, o) }

type textWriter struct {
	w       *bufio.Writer
	color   bool
	width   int
	withCPU bool // a CPU time column next to the sample counts
	byCPU   bool // ranked by CPU time
	// all is the whole profile, which the "all" column is a share of.
	all Summary
}

func (t *textWriter) heading(s string) {
	s = Truncate(s, t.width)
	if t.color {
		s = "\x1b[1m" + s + "\x1b[0m"
	}
	t.w.WriteString(s)
	t.w.WriteByte('\n')
}

// writeText prints the whole profile first (its summary, then all threads
// together and the processes, busiest first), then a section per thread,
// busiest first, up to the limit, and says what it left out.
func writeText(w io.Writer, r Report, o TextOptions) error {
	t := &textWriter{w: bufio.NewWriter(w), color: o.Color, width: o.Width, withCPU: r.OffCPU || r.By == ByCPU, byCPU: r.By == ByCPU, all: r.All}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if o.All {
		limit = -1
	}
	threads := r.folded
	if threads == nil {
		threads = r.Threads // a Report made elsewhere than Build
	}
	t.heading(fmt.Sprintf("%s in %s of %s, CPU %s%s, interval %s, duration %s",
		plural(r.Samples, "sample"), plural(int64(len(threads)), "thread"),
		plural(int64(r.Processes), "process"), formatDuration(r.CPU), estimated(r.CPUEstimated),
		formatDuration(r.Interval), formatDuration(r.Duration)))
	if r.LostEvents > 0 {
		fmt.Fprintf(t.w, "warning: %d events were lost; counts are low by about that much\n", r.LostEvents)
	}
	if r.NoStackCPU > 0 {
		fmt.Fprintf(t.w, "note: %s of the CPU time had no stack (%s); it is counted in the samples that follow it\n",
			formatDuration(r.NoStackCPU), r.NoStackReason)
	}
	if len(threads) > 1 {
		t.w.WriteByte('\n')
		t.heading("All threads")
		fmt.Fprintf(t.w, "  %s, CPU %s%s\n", plural(r.All.Samples, "sample"), formatDuration(r.All.CPU), estimated(r.All.CPUEstimated))
		t.lists(r.All, false)
	}
	if len(r.ProcessTotals) > 1 {
		t.w.WriteByte('\n')
		t.heading("Processes")
		t.row([]string{pad("samples", 9, true), pad("all", 8, true), pad("CPU", 10, true), pad("threads", 7, true), pad("pid", 7, true), "process"})
		var more, moreSamples int64
		for i, pt := range r.ProcessTotals {
			if limit >= 0 && i >= limit || pt.Samples == 0 && !o.All {
				more++
				moreSamples += pt.Samples
				continue
			}
			t.row([]string{pad(strconv.FormatInt(pt.Samples, 10), 9, true), pad(pctString(pt.PctOfAll), 8, true),
				pad(formatDuration(pt.CPU), 10, true), pad(strconv.Itoa(pt.Threads), 7, true), pad(strconv.Itoa(pt.Pid), 7, true), programs(pt.Name, pt.Programs)})
		}
		if more > 0 {
			fmt.Fprintf(t.w, "    … and %s with %s (%s of all)\n", plural(more, "more process"), plural(moreSamples, "sample"), pctString(pct(moreSamples, r.Samples)))
		}
	}
	var more, idle, moreSamples int64
	shown := 0
	for _, th := range threads {
		if th.Samples == 0 && !o.All {
			idle++
			continue
		}
		if limit >= 0 && shown >= limit {
			more++
			moreSamples += th.Samples
			continue
		}
		shown++
		t.w.WriteByte('\n')
		main := ""
		if th.Main {
			main = ", main thread"
		}
		t.heading(fmt.Sprintf("%s (pid %d) / %s (tid %d)%s", programs(th.ProcessName, th.Programs), th.Pid, orUnknown(printable(th.Name)), th.Tid, main))
		fmt.Fprintf(t.w, "  %s (%s of all), CPU %s%s\n", plural(th.Samples, "sample"), pctString(th.PctOfAll),
			formatDuration(th.CPU), estimated(th.CPUEstimated))
		t.lists(th.Summary, true)
	}
	if more > 0 || idle > 0 {
		t.w.WriteByte('\n')
		var parts []string
		if more > 0 {
			parts = append(parts, fmt.Sprintf("%s with %s (%s of all)", plural(more, "more thread"), plural(moreSamples, "sample"), pctString(pct(moreSamples, r.Samples))))
		}
		if idle > 0 {
			parts = append(parts, plural(idle, "thread")+" without samples")
		}
		fmt.Fprintf(t.w, "Not shown: %s; --limit N or --all shows them\n", strings.Join(parts, ", "))
	}
	return t.w.Flush()
}

// programs names a process by its program, or by the chain of programs it
// ran through exec ("bash → python3.12").
func programs(name string, chain []string) string {
	if len(chain) > 1 {
		out := make([]string, len(chain))
		for i, c := range chain {
			out[i] = orUnknown(printable(c))
		}
		return strings.Join(out, " → ")
	}
	return orUnknown(printable(name))
}

func (t *textWriter) lists(s Summary, perThread bool) {
	if len(s.TopSelf) == 0 && len(s.TopTotal) == 0 {
		t.w.WriteString("  no stacks sampled\n")
		return
	}
	// What the samples measure: CPU time, unless threads were sampled
	// off the CPU too and the lists rank by samples.
	what := "CPU time"
	if t.withCPU && !t.byCPU {
		what = "wall-clock time"
	}
	t.table("  Top by self "+what, s, s.TopSelf, true, perThread)
	t.table("  Top by total "+what, s, s.TopTotal, false, perThread)
}

// maxNameWidth keeps one monster C++ name from pushing every location off
// screen; longer names overflow their column instead of being cut.
const maxNameWidth = 60

// share renders part of whole in percent to two decimals, from the counts
// themselves: the JSON percentages are rounded to four decimals, and
// rounding those again to two can land a hundredth off (15.1650 from
// 15.16503), where perf report, which rounds once, shows 15.17.
func share(part, whole int64) string {
	if whole == 0 {
		return pctString(0)
	}
	return pctString(float64(part) * 100 / float64(whole))
}

func (t *textWriter) table(title string, s Summary, fs []Function, self, perThread bool) {
	t.w.WriteByte('\n')
	t.w.WriteString(title)
	t.w.WriteByte('\n')
	nameW := len("function")
	countW := len("samples")
	for _, f := range fs {
		nameW = max(nameW, min(utf8.RuneCountInString(printable(f.Name)), maxNameWidth))
		countW = max(countW, len(strconv.FormatInt(count(f, self), 10)))
	}
	// With off-CPU samples, or ranked by CPU, wall-clock and CPU time
	// stand side by side.
	withCPU := t.withCPU
	cpuW := len("CPU")
	if withCPU {
		for _, f := range fs {
			cpuW = max(cpuW, len(formatDuration(cpuOf(f, self))))
		}
	}
	cols := []string{pad("samples", countW, true)}
	if withCPU {
		cols = append(cols, pad("CPU", cpuW, true))
	}
	if perThread {
		cols = append(cols, pad("thread", 8, true))
	}
	cols = append(cols, pad("all", 8, true), pad("function", nameW, false), "location")
	t.row(cols)
	for _, f := range fs {
		v, whole, allWhole := count(f, self), s.Samples, t.all.Samples
		if t.byCPU {
			v, whole, allWhole = cpuOf(f, self), s.CPU, t.all.CPU
		}
		p, pa := share(v, whole), share(v, allWhole)
		cols = cols[:0]
		cols = append(cols, pad(strconv.FormatInt(count(f, self), 10), countW, true))
		if withCPU {
			cols = append(cols, pad(formatDuration(cpuOf(f, self)), cpuW, true))
		}
		if perThread {
			cols = append(cols, pad(p, 8, true))
		}
		cols = append(cols, pad(pa, 8, true), pad(printable(f.Name), nameW, false), location(f))
		t.row(cols)
	}
}

func (t *textWriter) row(cols []string) {
	line := "    " + strings.Join(cols, "  ")
	t.w.WriteString(Truncate(strings.TrimRight(line, " "), t.width))
	t.w.WriteByte('\n')
}

func cpuOf(f Function, self bool) int64 {
	if self {
		return f.SelfCPU
	}
	return f.TotalCPU
}

func count(f Function, self bool) int64 {
	if self {
		return f.Self
	}
	return f.Total
}

func location(f Function) string {
	var b strings.Builder
	if f.File != "" {
		b.WriteString(printable(f.File))
		if f.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(f.Line))
		}
	}
	if f.Lib != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(LibLabel(printable(f.Lib)))
	}
	return b.String()
}

func pad(s string, w int, right bool) string {
	n := utf8.RuneCountInString(s)
	if n >= w {
		return s
	}
	if right {
		return strings.Repeat(" ", w-n) + s
	}
	return s + strings.Repeat(" ", w-n)
}

func pctString(p float64) string { return strconv.FormatFloat(p, 'f', 2, 64) + "%" }

func plural(n int64, word string) string {
	s := strconv.FormatInt(n, 10) + " " + word
	if n != 1 {
		if strings.HasSuffix(word, "s") {
			s += "es"
		} else {
			s += "s"
		}
	}
	return s
}

func estimated(e bool) string {
	if e {
		return " (partly estimated from the interval)"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// printable escapes what would act on a terminal rather than show: C0 and
// C1 control characters (ESC starts color and cursor sequences, a newline
// would forge a row), bidirectional overrides, and invalid UTF-8. They are
// written as Go quotes them (\x1b, \n, \u202e); everything else, including
// backslashes and non-ASCII letters, is left as it is. Names reach the
// report from the profiled program (thread names, symbols, file paths), so
// they are not trusted.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if escaped(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case escaped(r):
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// escaped reports whether printable escapes r.
func escaped(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true // U+FFFD itself is harmless, but decoding tells it apart
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true // bidi embeddings, overrides, isolates and marks
	}
	return false
}
