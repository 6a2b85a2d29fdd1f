package mach

// The loaded images of a macOS task, from dyld's own list
// (dyld_all_image_infos, found through task_info(TASK_DYLD_INFO)), each
// identified by the Mach-O header it has in the target's memory.

import (
	"fmt"

	"github.com/gprof-dev/gprof/attach/internal/suspendwalk"
	"github.com/gprof-dev/gprof/event"
	"github.com/gprof-dev/gprof/objfile"
)

// machImages tracks the images of one task and reports each new one once.
type machImages struct {
	task     machTask
	pid      int
	infoAddr uint64 // dyld_all_image_infos in the target
	last     dyldAllImageInfos
	read     bool // last holds a list that was read whole
	seen     map[uint64]bool
	head     [aiiV15Size]byte
	hdr      []byte
	path     []byte
}

func newMachImages(task machTask, pid int, infoAddr uint64) *machImages {
	return &machImages{task: task, pid: pid, infoAddr: infoAddr, seen: map[uint64]bool{}, path: make([]byte, 1024)}
}

// poll reports images loaded since the last poll. It reads only the head
// of dyld_all_image_infos unless the list changed: dyld bumps
// infoArrayChangeTimestamp (version 15 and later) on every change, and
// sets infoArray to null while it makes one.
func (m *machImages) poll(emit func(event.Event), now int64) error {
	if err := m.task.read(m.infoAddr, m.head[:]); err != nil {
		// Versions before 15 are shorter; their head still fits 16 bytes
		// at least.
		if err := m.task.read(m.infoAddr, m.head[:aiiDyldHeader+8]); err != nil {
			return fmt.Errorf("reading dyld_all_image_infos: %w", err)
		}
	}
	ai, err := decodeAllImageInfos(m.head[:])
	if err != nil {
		return err
	}
	if ai.InfoArray == 0 {
		return errListChanging
	}
	if m.read && ai.Version >= 15 && ai.Timestamp == m.last.Timestamp &&
		ai.Count == m.last.Count && ai.InfoArray == m.last.InfoArray {
		return nil
	}
	if ai.Count > maxImages {
		return fmt.Errorf("dyld_all_image_infos: %d images", ai.Count)
	}
	arr := make([]byte, int(ai.Count)*dyldImageInfoSize)
	if err := m.task.read(ai.InfoArray, arr); err != nil {
		return fmt.Errorf("reading dyld's image list: %w", err)
	}
	imgs, err := decodeImageInfos(arr, int(ai.Count))
	if err != nil {
		return err
	}
	if ai.DyldHeader != 0 {
		imgs = append(imgs, dyldImage{Header: ai.DyldHeader, Path: ai.DyldPath})
	}
	for _, im := range imgs {
		if im.Header == 0 || m.seen[im.Header] {
			continue
		}
		mp, err := m.image(im)
		if err != nil {
			continue // retried when the list changes again
		}
		m.seen[im.Header] = true
		mp.Time = now
		emit(mp)
	}
	m.last, m.read = ai, true
	return nil
}

// image reads and identifies one image from the target's memory.
func (m *machImages) image(im dyldImage) (*event.Map, error) {
	var h [objfile.MachHeaderSize64]byte
	if err := m.task.read(im.Header, h[:]); err != nil {
		return nil, err
	}
	n, err := objfile.MachOSizeOfCmds(h[:])
	if err != nil {
		return nil, err
	}
	if cap(m.hdr) < n {
		m.hdr = make([]byte, n)
	}
	hdr := m.hdr[:n]
	if err := m.task.read(im.Header, hdr); err != nil {
		return nil, err
	}
	img, err := objfile.MachOFromMemory(hdr)
	if err != nil {
		return nil, err
	}
	path := m.cString(im.Path)
	if path == "" && img.Type == machoTypeDylinker {
		path = "/usr/lib/dyld"
	}
	id := img.Identity(path)
	return &event.Map{
		Pid:   m.pid,
		Start: im.Header,
		End:   im.Header + img.TextSize,
		Path:  path,
		Image: &id,
		// Its __TEXT starts at the header: relative addresses count from there.
		ImageBase: im.Header,
	}, nil
}

// machoTypeDylinker is MH_DYLINKER, dyld's own file type.
const machoTypeDylinker = 7

// cString reads a NUL-terminated string of at most len(m.path) bytes at
// addr, a page at a time so that a string near the end of a mapping reads.
func (m *machImages) cString(addr uint64) string {
	if addr == 0 {
		return ""
	}
	var out []byte
	for len(out) < len(m.path) {
		end := (addr + suspendwalk.StackPage) &^ (suspendwalk.StackPage - 1)
		n := min(end-addr, uint64(len(m.path)-len(out)))
		buf := m.path[:n]
		if m.task.read(addr, buf) != nil {
			break
		}
		for i, c := range buf {
			if c == 0 {
				return string(append(out, buf[:i]...))
			}
		}
		out = append(out, buf...)
		addr += n
	}
	return string(out)
}
