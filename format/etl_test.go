package format

import (
	"testing"
)

// An ETL file is recognized by its first buffer's header and read as a
// trace, whatever its name.
func TestFileETL(t *testing.T) {
	p, k, err := File("../etw/testdata/cut.etl")
	if err != nil {
		t.Fatal(err)
	}
	if k != ETL {
		t.Fatalf("kind %q, want %q", k, ETL)
	}
	if p.Meta.Platform != "Windows" || len(p.Processes) == 0 {
		t.Fatalf("meta %+v, %d processes", p.Meta, len(p.Processes))
	}
}
