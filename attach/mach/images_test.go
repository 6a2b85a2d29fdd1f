package mach

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gprof-dev/gprof/objfile"
)

// allImageInfos lays out a version-17 dyld_all_image_infos as dyld does in
// a 64-bit process.
func allImageInfos(count uint32, infoArray, dyldHeader, timestamp uint64) []byte {
	b := make([]byte, 0x170)
	binary.LittleEndian.PutUint32(b[0:], 17)
	binary.LittleEndian.PutUint32(b[4:], count)
	binary.LittleEndian.PutUint64(b[8:], infoArray)
	b[25] = 1 // libSystemInitialized
	binary.LittleEndian.PutUint64(b[32:], dyldHeader)
	binary.LittleEndian.PutUint64(b[176:], 0x180000000) // sharedCacheBaseAddress
	binary.LittleEndian.PutUint64(b[184:], timestamp)
	return b
}

func imageInfoArray(imgs ...dyldImage) []byte {
	b := make([]byte, len(imgs)*24)
	for i, im := range imgs {
		binary.LittleEndian.PutUint64(b[i*24:], im.Header)
		binary.LittleEndian.PutUint64(b[i*24+8:], im.Path)
		binary.LittleEndian.PutUint64(b[i*24+16:], 0x6500000+uint64(i)) // mod date
	}
	return b
}

// The image list is read from a memory image laid out as dyld lays it
// out, pointing at the headers of real Mach-O files: each image is
// reported once, with the identity its header gives and its __TEXT range,
// and an unchanged list costs one small read per poll.
func TestMachImagesPoll(t *testing.T) {
	app := darwinGo(t, "arm64", "app")
	lib := darwinGo(t, "arm64", "lib")
	third := darwinGo(t, "amd64", "plugin")
	appID, libID, thirdID := machoOracle(t, app), machoOracle(t, lib), machoOracle(t, third)
	const (
		aii      = 0x1f0a3c060
		arr      = 0x600000000
		appHdr   = 0x100000000
		libHdr   = 0x18c000000 // in the shared cache: no file on disk
		thirdHdr = 0x190000000
		paths    = 0x600003000
	)
	// A header is mapped as a whole page (or more) at the load address.
	page := func(file []byte) []byte { return slices.Clone(file[:0x4000]) }
	pathPage := make([]byte, 0x1000)
	copy(pathPage, "/Users/me/app\x00/usr/lib/libSystem.B.dylib\x00")
	// The last path ends 9 bytes before the end of its mapping: only a
	// read that stops at the page boundary finds it.
	copy(pathPage[0x1000-9:], "/p.dylib\x00")
	task := newFakeTask(t)
	task.mem = []fakeRegion{
		{aii, allImageInfos(2, arr, appHdr, 7)},
		{arr, imageInfoArray(dyldImage{appHdr, paths}, dyldImage{libHdr, paths + 14})},
		{paths, pathPage},
		{appHdr, page(app)}, {libHdr, page(lib)}, {thirdHdr, page(third)},
	}
	log := &eventLog{}
	m := newMachImages(task, 50, aii)
	if err := m.poll(log.emit, 1); err != nil {
		t.Fatal(err)
	}
	id := func(o oracle) string { return (objfile.MachOImage{UUID: o.uuid}).BreakpadID() }
	want := []string{
		"map 0x100000000-" + hex64(appHdr+appID.textSize) + " /Users/me/app " + id(appID),
		"map 0x18c000000-" + hex64(libHdr+libID.textSize) + " /usr/lib/libSystem.B.dylib " + id(libID),
	}
	if got := log.take(); !slices.Equal(got, want) {
		t.Fatalf("first poll:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	task.reads = 0
	if err := m.poll(log.emit, 2); err != nil || len(log.take()) != 0 || task.reads != 1 {
		t.Errorf("unchanged list: err %v, %d reads", err, task.reads)
	}

	// dyld is changing the list: nothing is read but the head.
	task.mem[0].data = allImageInfos(2, 0, appHdr, 7)
	if err := m.poll(log.emit, 3); !errors.Is(err, errListChanging) || len(log.take()) != 0 {
		t.Errorf("list being changed: %v", err)
	}

	// A dlopen: a new array, a new timestamp, one new image.
	task.mem[0].data = allImageInfos(3, arr+0x100, appHdr, 8)
	task.mem = append(task.mem, fakeRegion{arr + 0x100, imageInfoArray(
		dyldImage{appHdr, paths}, dyldImage{libHdr, paths + 14}, dyldImage{thirdHdr, paths + 0x1000 - 9})})
	if err := m.poll(log.emit, 4); err != nil {
		t.Fatal(err)
	}
	want = []string{"map 0x190000000-" + hex64(thirdHdr+thirdID.textSize) + " /p.dylib " + id(thirdID)}
	if got := log.take(); !slices.Equal(got, want) {
		t.Errorf("after dlopen: %q, want %q", got, want)
	}
}

func hex64(v uint64) string { return fmt.Sprintf("%#x", v) }
