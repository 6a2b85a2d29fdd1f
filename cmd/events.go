package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/record"
)

// record's events: -e in perf's syntax, -c and -F as perf has them,
// --probe, --latency (see attach.ParseEvents and docs/events.md).

func eventFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "event", Aliases: []string{"e"}, Usage: "sample `EVENT`s, comma-separated or repeated, in perf's names (default cpu-clock): cpu-clock, task-clock; page-faults, minor-faults, major-faults, context-switches, cpu-migrations, alignment-faults, emulation-faults; tracepoints SYSTEM:NAME (sched:sched_switch, syscalls:sys_enter_openat); probe:FUNC, probe_BIN:FUNC, sdt_PROVIDER:NAME; cycles, instructions, cache-misses, branch-misses where a hardware PMU exists. EVENT/period=N/ or EVENT/freq=N/ sets one event's rate, :u or :k one mode. The first event's samples are each thread's; the others' get a track of their own"},
		&cli.StringFlag{Name: "count", Aliases: []string{"c"}, Usage: "sample every `N`th occurrence of each event (for cpu-clock and task-clock, every N ns of CPU time) unless its own /period=/ or /freq=/ says otherwise, as perf record -c; tracepoints and probes default to every hit"},
		&cli.StringSliceFlag{Name: "probe", Usage: "also sample at `PROBE`, made for the recording and gone after it: FUNC (a kernel function: event probe:FUNC), BIN:FUNC (a function of a program or library: probe_BIN:FUNC), BIN:sdt_PROVIDER:NAME (a USDT probe), with +OFFSET or %return after a function (repeatable)"},
		&cli.BoolFlag{Name: "latency", Usage: "also record context switches, so that the profile has each process's parallelism (threads on a CPU) and 'gprof report --latency' can weigh samples by wall-clock time, as perf record --latency"},
	}
}

// recordEvents reads -e, -c, -F, --probe and --latency into o.
func recordEvents(c *cli.Context, o *record.Options) error {
	var specs []attach.EventSpec
	given := c.StringSlice("event")
	for _, list := range given {
		evs, err := attach.ParseEvents(list)
		if err != nil {
			return usagef("%v", err)
		}
		specs = append(specs, evs...)
	}
	for _, p := range c.StringSlice("probe") {
		e, err := attach.ParseProbe(p)
		if err != nil {
			return usagef("%v", err)
		}
		specs = append(specs, e)
	}
	if len(given) == 0 && len(specs) > 0 {
		// --probe alone: CPU time too, the probes beside it.
		cpu, _ := attach.ParseEvents("cpu-clock")
		specs = append(cpu, specs...)
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.Name] {
			return usagef("event %s is given twice", s.Name)
		}
		seen[s.Name] = true
	}
	if c.IsSet("count") {
		n, err := strconv.ParseUint(strings.TrimSpace(c.String("count")), 10, 64)
		if err != nil || n == 0 {
			return usagef("invalid -c %q: give a positive whole number of events (for cpu-clock, of ns)", c.String("count"))
		}
		if c.IsSet("rate") || c.IsSet("interval") {
			return usagef("give -c (a period) or -F/--rate/--interval (a rate), not both; per event, write EVENT/period=N/ or EVENT/freq=N/")
		}
		for i := range specs {
			if specs[i].Period == 0 && specs[i].Freq == 0 {
				specs[i].Period = n
			}
		}
	} else if c.IsSet("rate") {
		for i := range specs {
			if s := &specs[i]; s.Kind != attach.KindClock && s.Period == 0 && s.Freq == 0 {
				s.Freq = uint64(c.Float64("rate"))
			}
		}
	}
	if len(specs) == 0 {
		specs, _ = attach.ParseEvents("cpu-clock")
	}
	if main := specs[0]; main.Kind == attach.KindClock {
		// The interval the rate check and off-CPU samples go by.
		switch {
		case main.Period > 0:
			o.Attach.Interval = time.Duration(main.Period)
		case main.Freq > 0:
			o.Attach.Interval = time.Second / time.Duration(main.Freq)
		}
		if o.Attach.Interval < 10*time.Microsecond || o.Attach.Interval > 10*time.Second {
			return usagef("%s samples every %s of CPU time: use 10us to 10s", main.Name, o.Attach.Interval)
		}
	}
	o.Attach.Event = specs[0].Name
	if len(specs) > 1 || specs[0].Name != "cpu-clock" || specs[0].Period > 0 || specs[0].Freq > 0 || specs[0].User || specs[0].Kernel {
		o.Attach.Events = specs
	}
	o.Attach.Switches = c.Bool("latency")
	return nil
}
