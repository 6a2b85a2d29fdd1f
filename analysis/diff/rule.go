package diff

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/analysis/report"
)

// Rule is one --fail-if gate:
//
//	self:FUNC>+Npp   FUNC's share of samples (self) grew by more than N percentage points
//	total:FUNC>+Npp  the same for total (on the stack) share
//	self:FUNC>+N%    FUNC's self time grew by more than N percent
//	total:FUNC>+N%   the same for total time
//	cpu>+N%          the whole profile's CPU time grew by more than N percent
//
// FUNC is a function name, matched exactly, or a glob where * matches any
// run of characters; a glob matches functions only, not the bracketed
// pseudo-frames ([kernel]...), which a rule names exactly to gate on. A
// change within the noise never fails a rule.
type Rule struct {
	Text    string
	kind    string // "self", "total" or "cpu"
	pattern string
	limit   float64
	points  bool // pp (share) rather than % (time)
}

// RuleResult is a rule's outcome, with the functions that broke it.
type RuleResult struct {
	Rule   string   `json:"rule"`
	Passed bool     `json:"passed"`
	Broken []string `json:"broken"`
	// Noisy lists the matches whose change passed the limit but was
	// within the noise, so did not fail the rule.
	Noisy []string `json:"within_noise"`
	// Matched counts the functions the rule matched in either profile (1
	// for cpu rules). A rule that matches none gates nothing: its name is
	// likely misspelt, and the command says so and fails.
	Matched int `json:"matched"`
	// Measure is the figure the rule judges, named as a function's field
	// is ("self_pct", "total_pct", "self_ns", "total_ns"), or "cpu_ns"
	// for a cpu rule.
	Measure string `json:"measure"`
	// Changes is where the rule looked: its measure for each function it
	// broke, each that passed its limit within the noise, and, for a rule
	// naming one function, that function whatever its verdict (for a cpu
	// rule, the CPU time); broken ones first.
	Changes []RuleChange `json:"changes"`
}

// RuleChange is a rule's measure of one function (or of the CPU time,
// named "cpu").
type RuleChange struct {
	Name   string `json:"name"`
	Change Change `json:"change"`
	// Verdict is "broken", "within_noise" (past the limit, not past the
	// noise) or "ok".
	Verdict string `json:"verdict"`
}

// ParseRule parses a --fail-if rule.
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("invalid rule %q: %s (use self:FUNC>+Npp, total:FUNC>+N%%, cpu>+N%%...)", s, why)
	}
	body, ok := "", false
	if rest, found := strings.CutPrefix(s, "cpu>"); found && !strings.HasPrefix(rest, "+") {
		// The limit is a growth: say the form that is meant.
		return bad(fmt.Sprintf("a limit is how much it may grow, with a + (did you mean cpu>+%s?)", withSuffix(rest, "%")))
	}
	if rest, found := strings.CutPrefix(s, "cpu>+"); found {
		r.kind, body = "cpu", rest
		if !strings.HasSuffix(body, "%") {
			return bad("cpu takes a percent limit")
		}
	} else {
		var kind string
		kind, body, ok = strings.Cut(s, ":")
		if !ok || (kind != "self" && kind != "total") {
			return bad("it must start with self:, total: or cpu>")
		}
		r.kind = kind
		i := strings.LastIndex(body, ">+")
		if j := strings.LastIndex(body, ">"); i < 0 && j > 0 && j+1 < len(body) {
			return bad(fmt.Sprintf("a limit is how much it may grow, with a + (did you mean %s:%s>+%s?)", kind, body[:j], withSuffix(body[j+1:], "pp")))
		}
		if i <= 0 {
			return bad("missing the function name or >+LIMIT")
		}
		r.pattern, body = body[:i], body[i+2:]
	}
	switch {
	case strings.HasSuffix(body, "pp"):
		r.points, body = true, strings.TrimSuffix(body, "pp")
	case strings.HasSuffix(body, "%"):
		body = strings.TrimSuffix(body, "%")
	default:
		return bad("the limit must end in pp (percentage points of samples) or % (of time)")
	}
	v, err := strconv.ParseFloat(body, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return bad("the limit must be a non-negative number")
	}
	r.limit = v
	return r, nil
}

// withSuffix returns a limit with a unit: its own if it has one, else unit.
func withSuffix(limit, unit string) string {
	if strings.HasSuffix(limit, "%") || strings.HasSuffix(limit, "pp") {
		return limit
	}
	return limit + unit
}

func (r Rule) check(res *Result) RuleResult {
	out := RuleResult{Rule: r.Text, Passed: true, Broken: []string{}, Noisy: []string{}, Measure: r.measure(), Changes: []RuleChange{}}
	var noisy, ok []RuleChange
	judge := func(name string, c Change) {
		grew := c.Delta > r.limit
		if !r.points {
			grew = c.Delta > 0 && (c.Appeared || c.Pct > r.limit)
		}
		switch {
		case !grew:
			ok = append(ok, RuleChange{name, c, "ok"})
		case !c.Significant:
			out.Noisy = append(out.Noisy, name)
			noisy = append(noisy, RuleChange{name, c, "within_noise"})
		default:
			out.Passed = false
			out.Broken = append(out.Broken, name)
			out.Changes = append(out.Changes, RuleChange{name, c, "broken"})
		}
	}
	if r.kind == "cpu" {
		out.Matched = 1
		judge("cpu", res.CPU)
	} else {
		for _, f := range res.Functions {
			if !report.Match(r.pattern, f.Name) {
				continue
			}
			if pseudo(f.Name) && r.pattern != f.Name {
				// [kernel], [blocked], [preempted] stand for time, not
				// code: a glob means functions; name one to gate on it.
				continue
			}
			out.Matched++
			judge(f.Name, r.of(f))
		}
	}
	out.Changes = append(out.Changes, noisy...)
	if !strings.Contains(r.pattern, "*") {
		// A rule naming one function (or the CPU time) shows it passing
		// too: where it looked.
		out.Changes = append(out.Changes, ok...)
	}
	return out
}

// of is the change of f that the rule judges.
func (r Rule) of(f Func) Change {
	switch {
	case r.kind == "self" && r.points:
		return f.SelfShare
	case r.kind == "self":
		return f.SelfTime
	case r.points:
		return f.TotalShare
	}
	return f.TotalTime
}

// measure names the figure the rule judges as Func's JSON does.
func (r Rule) measure() string {
	switch {
	case r.kind == "cpu":
		return "cpu_ns"
	case r.points:
		return r.kind + "_pct"
	}
	return r.kind + "_ns"
}

// pseudo reports whether name is one of gprof's bracketed pseudo-frames
// rather than a function: [kernel] (time in the kernel, which grows with
// the machine's load as much as with the program), [blocked], [preempted].
func pseudo(name string) bool {
	return len(name) > 2 && name[0] == '[' && name[len(name)-1] == ']'
}
