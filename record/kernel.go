package record

import "github.com/gprof-dev/gprof/profile"

// kernelLibName is how perf and samply name the running kernel.
const kernelLibName = "[kernel.kallsyms]"

// kernelLib, per platform, describes the running kernel as a library.

// addKernelLib adds the kernel to every process that has kernel frames.
func addKernelLib(p *profile.Profile) {
	kl, ok := kernelLib()
	if !ok {
		return
	}
	for _, pr := range p.Processes {
		if hasKernelFrames(pr) {
			pr.Libs = profile.SortLibs(append(pr.Libs, kl))
		}
	}
}

func hasKernelFrames(pr *profile.Process) bool {
	for _, th := range pr.Threads {
		for _, f := range th.Frames.Frames {
			if f.Category == profile.CategoryKernel {
				return true
			}
		}
	}
	return false
}
