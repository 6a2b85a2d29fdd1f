package perfdata

// Feature sections (enum HEADER_* in tools/perf/util/header.h): a bitmap in
// the file header says which are present, and their section descriptors
// follow the data section in bit order. In pipe mode each arrives as a
// HEADER_FEATURE record instead.
const (
	featTracingData = 1
	featBuildID     = 2
	featHostname    = 3
	featOSRelease   = 4
	featVersion     = 5
	featArch        = 6
	featNRCPUs      = 7
	featCPUDesc     = 8
	featCmdline     = 11
	featEventDesc   = 12
	featBits        = 256
)

func (f *File) readFeatures(data []byte, at uint64, bitmap [4]uint64) {
	bo := f.bo
	for bit := 0; bit < featBits; bit++ {
		if bitmap[bit/64]&(1<<(bit%64)) == 0 {
			continue
		}
		if at > uint64(len(data)) || uint64(len(data))-at < 16 {
			return // a truncated file keeps its records; features are extras
		}
		s := section{bo.Uint64(data[at:]), bo.Uint64(data[at+8:])}
		at += 16
		if body, ok := s.in(data); ok {
			f.feature(bit, body)
		}
	}
}

func (f *File) feature(id int, b []byte) {
	switch id {
	case featTracingData:
		f.tracingData(b)
	case featBuildID:
		for len(b) >= 8 {
			size := int(f.bo.Uint16(b[6:]))
			if size < 8 || size > len(b) {
				return
			}
			f.buildID(b[:size])
			b = b[size:]
		}
	case featHostname:
		f.Hostname, _ = f.str(b)
	case featOSRelease:
		f.OSRelease, _ = f.str(b)
	case featVersion:
		f.Version, _ = f.str(b)
	case featArch:
		f.Arch, _ = f.str(b)
	case featCPUDesc:
		f.CPUDesc, _ = f.str(b)
	case featNRCPUs:
		if len(b) >= 8 {
			f.CPUsAvail = int(f.bo.Uint32(b))
			f.CPUsOnline = int(f.bo.Uint32(b[4:]))
		}
	case featCmdline:
		if len(b) < 4 {
			return
		}
		n := int(f.bo.Uint32(b))
		b = b[4:]
		for i := 0; i < n && len(b) > 0; i++ {
			s, rest := f.str(b)
			f.Cmdline = append(f.Cmdline, s)
			b = rest
		}
	case featEventDesc:
		f.eventDesc(b)
	}
}

// str reads a struct perf_header_string (u32 len, then len bytes holding
// a NUL-terminated, padded string) and returns what follows.
func (f *File) str(b []byte) (string, []byte) {
	if len(b) < 4 {
		return "", nil
	}
	n := uint64(f.bo.Uint32(b))
	b = b[4:]
	if n > uint64(len(b)) {
		return cString(b), nil
	}
	return cString(b[:n]), b[n:]
}

// eventDesc names the events: u32 nr, u32 attr_size, then per event the
// attr, u32 nr_ids, the name string and nr_ids u64 ids.
func (f *File) eventDesc(b []byte) {
	bo := f.bo
	if len(b) < 8 {
		return
	}
	nr, asz := int(bo.Uint32(b)), uint64(bo.Uint32(b[4:]))
	b = b[8:]
	for i := 0; i < nr; i++ {
		if uint64(len(b)) < asz+4 {
			return
		}
		nids := uint64(bo.Uint32(b[asz:]))
		name, rest := f.str(b[asz+4:])
		if nids > uint64(len(rest))/8 {
			return
		}
		if i < len(f.Attrs) && name != "" {
			f.Attrs[i].Name = name
		}
		b = rest[8*nids:]
	}
}

// buildID records one struct perf_record_header_build_id: header, pid,
// build_id[24] (with its size in byte 20 when misc says so), filename.
func (f *File) buildID(rec []byte) {
	if len(rec) < 8+4+24 {
		return
	}
	misc := f.bo.Uint16(rec[4:])
	id := rec[12 : 12+20]
	if misc&miscBuildIDSize != 0 {
		if n := int(rec[12+20]); n <= 20 {
			id = id[:n]
		}
	} else {
		// Older perf pads a 20-byte SHA-1 with zeros; shorter ids (MD5,
		// 16 bytes) are padded the same way.
		for len(id) > 0 && id[len(id)-1] == 0 {
			id = id[:len(id)-1]
		}
	}
	name := cString(rec[36:])
	if name == "" || len(id) == 0 {
		return
	}
	f.BuildIDs[name] = append([]byte(nil), id...)
}
