package cmd

import "testing"

func TestBusiestThread(t *testing.T) {
	for _, c := range []struct {
		json string
		want int
	}{
		{`{"threads":[{"samples":{"length":3}},{"samples":{"length":9}},{"samples":{"length":9}}]}`, 1},
		{`{"threads":[{"samples":{"length":0}}]}`, 0},
		{`not json`, 0},
	} {
		if got := busiestThread([]byte(c.json)); got != c.want {
			t.Errorf("%s: %d, want %d", c.json, got, c.want)
		}
	}
}
