package gecko

import (
	"os"
	"testing"
)

// TestDump writes the test profile to $GECKO_DUMP for checking with
// external tools such as the front-end's importer.
func TestDump(t *testing.T) {
	path := os.Getenv("GECKO_DUMP")
	if path == "" {
		t.Skip("GECKO_DUMP not set")
	}
	if err := WriteFile(path, testProfile()); err != nil {
		t.Fatal(err)
	}
}
