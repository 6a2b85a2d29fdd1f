package cmd

import (
	"errors"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/profile"
)

// report's views beyond CPU time: --event, --during-marker, --latency
// (see analysis/report's events.go and latency.go, docs/events.md).

func reportEventFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "event", Usage: "summarize the samples of `EVENT` (a profile recorded with several, -e page-faults,cpu-clock say) instead of the first event's"},
		&cli.StringFlag{Name: "during-marker", Usage: "count only the samples taken while a marker named `NAME` (a * glob) was open in their process: a phase a program marked (a marker file's line)"},
		&cli.BoolFlag{Name: "latency", Usage: "weigh each sample by 1/parallelism (the recording's threads on a CPU at that moment), as perf report --latency: functions by their share of wall-clock time, their share of CPU time beside; needs a profile recorded with --latency"},
	}
}

// selectSamples narrows p to the samples --event and --during-marker ask
// for.
func selectSamples(c *cli.Context, p *profile.Profile) (*profile.Profile, error) {
	if ev := c.String("event"); ev != "" {
		var err error
		if p, err = report.SelectEvent(p, ev); err != nil {
			return nil, usagef("--event %s: %v", ev, err)
		}
	}
	if m := c.String("during-marker"); m != "" {
		var err error
		if p, _, err = report.DuringMarker(p, m); err != nil {
			return nil, usagef("--during-marker: %v", err)
		}
	}
	return p, nil
}

// latencyWriter is report --latency's output in the --format asked for.
func latencyWriter(c *cli.Context, p *profile.Profile, form string) (func(io.Writer) error, error) {
	if c.Bool("tree") || form == "collapsed" {
		return nil, usagef("--latency prints the top functions (text or json), not a tree or folded stacks")
	}
	l, err := report.BuildLatency(p, c.Int("top"), c.Bool("no-inline"))
	if errors.Is(err, report.ErrNoParallelism) {
		return nil, usagef("--latency: %v", err)
	}
	if err != nil {
		return nil, err
	}
	if form == "json" {
		return func(w io.Writer) error { return report.WriteLatencyJSON(w, l) }, nil
	}
	return func(w io.Writer) error { return report.WriteLatencyText(w, l) }, nil
}
