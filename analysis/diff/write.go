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

	// A function goes where its change beyond the noise puts it: by
	// its self share, else by its total share. One a rule broke is a
	// regression whatever its self share did, listed first with the
	// rule beside it, so that the gate and the list agree.
	brokeBy := map[string]string{}
	for _, r := range res.Rules {
		if r.Measure == "cpu_ns" {
			continue
		}
		for _, c := range r.Changes {
			if _, seen := brokeBy[c.Name]; c.Verdict == "broken" && !seen {
				brokeBy[c.Name] = r.Rule
			}
		}
	}
	var broken, reg, imp []Func
	for _, f := range res.Functions {
		c := f.SelfShare
		if !c.Significant {
			c = f.TotalShare
		}
		switch _, isBroken := brokeBy[f.Name]; {
		case isBroken:
			broken = append(broken, f)
		case !c.Significant:
		case c.Delta > 0:
			reg = append(reg, f)
		default:
			imp = append(imp, f)
		}
	}
	// list prints fs, the first keep of them whatever --top says.
	list := func(title string, fs []Func, keep int) {
		fmt.Fprintf(b, "\n%s\n", title)
		if len(fs) == 0 {
			b.WriteString("  none beyond the noise\n")
			return
		}
		fmt.Fprintf(b, "  %-22s %-22s %s\n", "self share (pp)", "total share (pp)", "function")
		for i, f := range fs {
			if top >= 0 && i >= max(top, keep) {
				fmt.Fprintf(b, "  … %d more (--top)\n", len(fs)-i)
				break
			}
			name := clean(f.Name)
			if f.Lib != "" {
				name += "  " + report.LibLabel(clean(f.Lib))
			}
			if r, ok := brokeBy[f.Name]; ok {
				name += "  ← breaks " + clean(r)
			}
			fmt.Fprintf(b, "  %-22s %-22s %s\n", share(f.SelfShare), share(f.TotalShare), name)
		}
	}
	of := "samples"
	if res.By == report.ByCPU {
		of = "CPU time"
	}
	// Rows a rule broke are always shown.
	list("Regressions (share of "+of+" grew):", append(broken, reg...), len(broken))
	list("Improvements (share of "+of+" shrank):", imp, 0)
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
			var shown, noisy []string
			for _, c := range r.Changes {
				line := ruleChange(r.Measure, c, clean)
				if c.Verdict == "within_noise" {
					noisy = append(noisy, line)
				} else {
					shown = append(shown, line)
				}
			}
			if len(shown) > 0 {
				fmt.Fprintf(b, ": %s", joinSome(shown))
			}
			if len(noisy) > 0 {
				fmt.Fprintf(b, " (within noise: %s)", joinSome(noisy))
			}
			b.WriteByte('\n')
		}
	}
	return b.Flush()
}

// ruleChange renders a rule's measure of one function: "jsoner total
// share +6.0 pp (10.0→16.0)", "work self time +12.5% (40ms→45ms)", "CPU
// time +2.1%", with "~" after a change within the noise.
func ruleChange(measure string, c RuleChange, clean func(string) string) string {
	ch := c.Change
	switch measure {
	case "cpu_ns":
		return "CPU time " + signedPct(ch) + noiseMark(ch)
	case "self_pct", "total_pct":
		return fmt.Sprintf("%s %s share %+.1f%s pp (%.1f→%.1f)", clean(c.Name), strings.TrimSuffix(measure, "_pct"), ch.Delta, noiseMark(ch), ch.Base, ch.New)
	}
	return fmt.Sprintf("%s %s time %s%s (%s→%s)", clean(c.Name), strings.TrimSuffix(measure, "_ns"), signedPct(ch), noiseMark(ch), duration(ch.Base), duration(ch.New))
}

// joinSome joins the first few of a rule's changes; --json has them all.
func joinSome(s []string) string {
	const show = 5
	if len(s) <= show {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:show], ", ") + fmt.Sprintf(", and %d more (--json lists them)", len(s)-show)
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
