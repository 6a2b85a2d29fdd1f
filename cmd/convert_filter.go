package cmd

import (
	"github.com/gprof-dev/gprof/analysis/report"
	"github.com/gprof-dev/gprof/profile"
	"github.com/urfave/cli/v2"
)

// convert's --pid and --name keep some processes of a profile: a Windows
// kernel trace (ETL) holds the whole system.
var (
	convertPidFlag  = &cli.StringSliceFlag{Name: "pid", Usage: "keep only process `PID` (repeatable, or comma-separated)"}
	convertNameFlag = &cli.StringSliceFlag{Name: "name", Usage: "keep only processes named `NAME` (a * glob, e.g. 'Test*.exe'; repeatable)"}
)

// filterProcesses applies --pid and --name to p; it is a usage error when
// they leave nothing.
func filterProcesses(c *cli.Context, p *profile.Profile) (*profile.Profile, error) {
	var f report.Filter
	var err error
	if f.Pids, err = intList(c, "pid"); err != nil {
		return nil, err
	}
	f.Processes = c.StringSlice("name")
	if f.Empty() {
		return p, nil
	}
	p = f.Apply(p)
	if len(p.Processes) == 0 {
		return nil, usagef("no process matches --pid and --name")
	}
	return p, nil
}
