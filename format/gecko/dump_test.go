package gecko

import (
	"os"
	"testing"
)

// TestDump writes the test profile (or, with $GECKO_DUMP_BIG set, the
// benchmark's) to $GECKO_DUMP for checking with external tools such as the
// front-end's importer.
func TestDump(t *testing.T) {
	path := os.Getenv("GECKO_DUMP")
	if path == "" {
		t.Skip("GECKO_DUMP not set")
	}
	p := testProfile()
	if os.Getenv("GECKO_DUMP_BIG") != "" {
		p = bigProfile()
	}
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
}
