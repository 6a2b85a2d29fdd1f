package record

import (
	"bufio"
	"os"
	"strings"
)

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
