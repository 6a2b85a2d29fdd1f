// Command gprofcpu is gprof with a CPU profile of itself: the same main,
// plus runtime/pprof when GPROF_CPUPROFILE names a file (and a heap
// profile, taken when the command returns, when GPROF_MEMPROFILE does).
// For finding where gprof spends its time and memory:
//
//	go build -o /tmp/gprofcpu ./bench/gprofcpu
//	GPROF_CPUPROFILE=/tmp/cpu.pprof /tmp/gprofcpu record -- ./prog
//	go tool pprof -top /tmp/gprofcpu /tmp/cpu.pprof
package main

import (
	"os"
	"runtime/pprof"

	"github.com/gprof-dev/gprof/attach"
	"github.com/gprof-dev/gprof/cmd"
)

func main() {
	attach.ExecHelperMain()
	code := func() int {
		if path := os.Getenv("GPROF_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				return 1
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return 1
			}
			defer pprof.StopCPUProfile()
		}
		code := cmd.Main(os.Args)
		if path := os.Getenv("GPROF_MEMPROFILE"); path != "" {
			if f, err := os.Create(path); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
		return code
	}()
	os.Exit(code)
}
