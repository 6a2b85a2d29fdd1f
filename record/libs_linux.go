package record

import (
	"bytes"

	"github.com/gprof-dev/gprof/internal/vdso"
	"github.com/gprof-dev/gprof/objfile"
)

// vdsoFile identifies the vdso. Every process on a host maps the same vdso
// image, so gprof reads its own, from its own memory: the image has no file.
func (r *libResolver) vdsoFile() *libFile {
	if r.vdsoDone {
		return r.vdso
	}
	r.vdsoDone = true
	img, err := vdso.Image()
	if err != nil {
		return nil
	}
	obj, err := objfile.NewFile(bytes.NewReader(img), "[vdso]")
	if err != nil || obj.Format() != objfile.ELF {
		return nil
	}
	r.vdso = &libFile{}
	r.vdso.identify(obj, "[vdso]")
	return r.vdso
}
