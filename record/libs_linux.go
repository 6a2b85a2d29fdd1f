package record

import (
	"fmt"
	"os"

	"github.com/gprof-dev/gprof/internal/vdso"
	"github.com/gprof-dev/gprof/symbolize"
)

// heldPath is a path that opens the file f holds open, even once it is
// deleted or replaced on disk.
func heldPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }

// vdsoFile identifies the vdso. Every process on a host maps the same vdso
// image, so gprof reads its own.
func (r *libResolver) vdsoFile() *libFile {
	if r.vdsoDone {
		return r.vdso
	}
	r.vdsoDone = true
	img, err := vdso.Image()
	if err != nil {
		return nil
	}
	f, err := os.CreateTemp("", "gprof-vdso-*.so")
	if err != nil {
		return nil
	}
	defer os.Remove(f.Name()) // the open fd keeps the data reachable
	_, werr := f.Write(img)
	f.Close()
	if werr != nil {
		return nil
	}
	bin, err := symbolize.Open(f.Name())
	if err != nil {
		return nil
	}
	r.vdso = &libFile{}
	r.vdso.identify(bin)
	r.vdso.id.DebugName, r.vdso.id.DebugPath = "[vdso]", "[vdso]"
	return r.vdso
}
