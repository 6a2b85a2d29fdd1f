package etl_test

import (
	"testing"

	"github.com/gprof-dev/gprof/format"
	"github.com/gprof-dev/gprof/record/etl"
)

// An ETL file is recognized by its first buffer's header and read as a
// trace, whatever its name, once record/etl is linked in.
func TestFileETL(t *testing.T) {
	p, k, err := format.File("../../etwevent/testdata/cut.etl")
	if err != nil {
		t.Fatal(err)
	}
	if k != etl.Kind {
		t.Fatalf("kind %q, want %q", k, etl.Kind)
	}
	if p.Meta.Platform != "Windows" || len(p.Processes) == 0 {
		t.Fatalf("meta %+v, %d processes", p.Meta, len(p.Processes))
	}
}
