package record

import "github.com/gprof-dev/gprof/format"

// kernelLibName is how perf and samply name the running kernel.
const kernelLibName = "[kernel.kallsyms]"

// kernelLib, per platform, describes the running kernel as a library.

// addKernelLib adds the kernel to every process that has kernel frames.
func addKernelLib(p *format.Profile) {
	kl, ok := kernelLib()
	if !ok {
		return
	}
	for _, pr := range p.Processes {
		if hasKernelFrames(pr) {
			pr.Libs = format.SortLibs(append(pr.Libs, kl))
		}
	}
}

func hasKernelFrames(pr *format.Process) bool {
	for _, th := range pr.Threads {
		for _, f := range th.Frames.Frames {
			if f.Category == format.CategoryKernel {
				return true
			}
		}
	}
	return false
}
