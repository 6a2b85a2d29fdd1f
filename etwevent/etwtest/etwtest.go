// Package etwtest gives tests the real ETW trace in etwevent/testdata, for the
// packages that read ETW events (etw/translate, record/etl).
package etwtest

import (
	"archive/zip"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// PerfViewTrace returns the ETL file of etw's real PerfView trace (kernel
// and CLR events, 8 CPUs, cached stacks) of Test.x86.exe, pid 3644.
func PerfViewTrace(t testing.TB) []byte {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	zr, err := zip.OpenReader(filepath.Join(filepath.Dir(here), "..", "testdata", "perfview-net.4.5.2.x86.etl.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".etl") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatal("no .etl in the zip")
	return nil
}
