package processed

import (
	"errors"
	"math"
	"strconv"
)

// column is a JSON array of numbers and nulls, decoded without allocating
// per element because processed tables have millions of entries. A null
// reads as NaN; an absent column is nil.
type column []float64

var errColumn = errors.New("expected an array of numbers")

func (c *column) UnmarshalJSON(b []byte) error {
	i := skipSpace(b, 0)
	if hasLit(b, i, "null") {
		*c = nil
		return nil
	}
	if i >= len(b) || b[i] != '[' {
		return errColumn
	}
	out := make([]float64, 0, len(b)/4)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		*c = out
		return nil
	}
	for {
		i = skipSpace(b, i)
		if hasLit(b, i, "null") {
			out = append(out, math.NaN())
			i += 4
		} else {
			j := i
			for j < len(b) && isNumByte(b[j]) {
				j++
			}
			if j == i {
				return errColumn
			}
			v, err := parseNum(b[i:j])
			if err != nil {
				return errColumn
			}
			out = append(out, v)
			i = j
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return errColumn
		}
		if b[i] == ']' {
			break
		}
		if b[i] != ',' {
			return errColumn
		}
		i++
	}
	*c = out
	return nil
}

// parseNum parses the common case, a small integer, without strconv.
func parseNum(s []byte) (float64, error) {
	if len(s) > 0 && len(s) < 16 {
		neg := s[0] == '-'
		k := 0
		if neg {
			k = 1
		}
		var v int64
		ok := k < len(s)
		for ; k < len(s); k++ {
			c := s[k]
			if c < '0' || c > '9' {
				ok = false
				break
			}
			v = v*10 + int64(c-'0')
		}
		if ok {
			if neg {
				v = -v
			}
			return float64(v), nil
		}
	}
	return strconv.ParseFloat(string(s), 64)
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

func (c column) isNull(i int) bool { return math.IsNaN(c[i]) }

// index returns element i as a table index, or -1 for null, negative or
// non-integral values, which callers treat as "none".
func (c column) index(i int) int {
	v := c[i]
	if !(v >= 0) || v > math.MaxInt32 || v != math.Trunc(v) {
		return -1
	}
	return int(v)
}
