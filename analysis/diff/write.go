package diff

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gprof-dev/gprof/analysis/report"
)

// WriteJSON writes res as indented JSON (the schema is Result's; see
// docs/ci.md).
func WriteJSON(w io.Writer, res Result) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(res)
}

// WriteText writes the biggest changes for a reader: top regressions and
// improvements by self share, then threads and processes, then the rules.
// Changes within the noise are marked with "~" and never listed as
// regressions or improvements.
func WriteText(w io.Writer, res Result, top int, clean func(string) string) error {
	b := bufio.NewWriter(w)
	sideLine := func(label string, s Side, cpu float64) {
		fmt.Fprintf(b, "%s %d run%s, %s samples, CPU %s\n", label, s.Runs, plural(s.Runs), joinInts(s.Samples), duration(cpu))
	}
	sideLine("base:", res.Base, res.CPU.Base)
	sideLine("new: ", res.New, res.CPU.New)
	fmt.Fprintf(b, "CPU time: %s%s\n", signedPct(res.CPU), noiseMark(res.CPU))

	var reg, imp []Func
	for _, f := range res.Functions {
		if !f.SelfShare.Significant && !f.TotalShare.Significant {
			continue
		}
		if f.SelfShare.Delta > 0 || f.SelfShare.Delta == 0 && f.TotalShare.Delta > 0 {
			reg = append(reg, f)
		} else {
			imp = append(imp, f)
		}
	}
	list := func(title string, fs []Func) {
		fmt.Fprintf(b, "\n%s\n", title)
		if len(fs) == 0 {
			b.WriteString("  none beyond the noise\n")
			return
		}
		fmt.Fprintf(b, "  %-22s %-22s %s\n", "self share (pp)", "total share (pp)", "function")
		for i, f := range fs {
			if top >= 0 && i >= top {
				fmt.Fprintf(b, "  … %d more (--top)\n", len(fs)-top)
				break
			}
			name := clean(f.Name)
			if f.Lib != "" {
				name += "  " + report.LibLabel(clean(f.Lib))
			}
			fmt.Fprintf(b, "  %-22s %-22s %s\n", share(f.SelfShare), share(f.TotalShare), name)
		}
	}
	of := "samples"
	if res.By == report.ByCPU {
		of = "CPU time"
	}
	list("Regressions (share of "+of+" grew):", reg)
	list("Improvements (share of "+of+" shrank):", imp)
	groupList := func(title string, gs []Group) {
		fmt.Fprintf(b, "\n%s\n", title)
		for i, g := range gs {
			if top >= 0 && i >= top {
				fmt.Fprintf(b, "  … %d more\n", len(gs)-top)
				break
			}
			name := g.Name
			if name == "" {
				name = "(unnamed)"
			}
			fmt.Fprintf(b, "  %-22s CPU %s%s  %s\n", share(g.Share), signedPct(g.CPU), noiseMark(g.CPU), clean(name))
		}
	}
	groupList("Threads by name (share of "+of+", pp):", res.Threads)
	groupList("Processes by name (share of "+of+", pp):", res.Processes)
	if len(res.Rules) > 0 {
		b.WriteString("\nRules:\n")
		for _, r := range res.Rules {
			status := "ok  "
			if !r.Passed {
				status = "FAIL"
			}
			if r.Matched == 0 {
				fmt.Fprintf(b, "  NONE %s: matches no function in either profile\n", clean(r.Rule))
				continue
			}
			fmt.Fprintf(b, "  %s %s", status, clean(r.Rule))
			if len(r.Broken) > 0 {
				fmt.Fprintf(b, ": %s", clean(strings.Join(r.Broken, ", ")))
			}
			if len(r.Noisy) > 0 {
				fmt.Fprintf(b, " (within noise: %s)", clean(strings.Join(r.Noisy, ", ")))
			}
			b.WriteByte('\n')
		}
	}
	return b.Flush()
}

// share renders a share change as "+16.2 (30.0→46.2)", with "~" when it
// is within the noise.
func share(c Change) string {
	return fmt.Sprintf("%+.1f%s (%.1f→%.1f)", c.Delta, noiseMark(c), c.Base, c.New)
}

func signedPct(c Change) string {
	if c.Appeared {
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", c.Pct)
}

func noiseMark(c Change) string {
	if c.Significant || c.Delta == 0 {
		return ""
	}
	return "~"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "/")
}

func duration(ns float64) string {
	return time.Duration(ns).Round(time.Millisecond).String()
}
