package attach

import (
	"context"
	"strings"
	"testing"
)

func TestParseBackend(t *testing.T) {
	if b, err := ParseBackend(""); err != nil || b != Auto {
		t.Errorf(`ParseBackend("") = %q, %v; want Auto`, b, err)
	}
	for _, b := range Backends() {
		if got, err := ParseBackend(string(b)); err != nil || got != b {
			t.Errorf("ParseBackend(%q) = %q, %v", b, got, err)
		}
	}
	if _, err := ParseBackend("dtrace"); err == nil || !strings.Contains(err.Error(), `"dtrace"`) {
		t.Errorf(`ParseBackend("dtrace") = %v; want an error naming it`, err)
	}
}

// The dispatcher checks the backend before any backend runs, whatever the
// caller passed.
func TestRecordRejectsUnknownBackend(t *testing.T) {
	ran := false
	_, err := Record(context.Background(), Options{Command: []string{"true"}, Backend: "dtrace"}, func(Event) { ran = true })
	if err == nil || ran {
		t.Errorf("Record with backend dtrace: err %v, events %v; want an error and nothing run", err, ran)
	}
}
