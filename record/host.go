package record

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

func platformName() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return runtime.GOOS
}

// archName uses the names toolchains and symbol servers use.
func archName() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "x86"
	}
	return runtime.GOARCH
}

func osDescription() string {
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		return platformName() + " " + strings.TrimSpace(string(b))
	}
	return platformName()
}

func cpuName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
