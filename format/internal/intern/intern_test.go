package intern

import (
	"slices"
	"testing"
)

func TestStrings(t *testing.T) {
	var s Strings
	for _, w := range []string{"a", "b", "a", "", "b"} {
		s.Index(w)
	}
	if got := s.List(); !slices.Equal(got, []string{"a", "b", ""}) || s.Index("b") != 1 || s.Len() != 3 {
		t.Errorf("list %q", got)
	}
	s.Reset()
	if s.Len() != 0 || s.Index("z") != 0 {
		t.Errorf("after Reset: %q", s.List())
	}
}
