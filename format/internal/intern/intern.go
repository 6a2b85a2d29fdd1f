// Package intern gives strings small indexes, as the Firefox Profiler's
// string tables want: each distinct string once, in first-seen order.
package intern

// Strings is a string table. The zero value is empty and ready.
type Strings struct {
	list []string
	idx  map[string]int32
}

// Index returns s's index, adding s if it is new.
func (t *Strings) Index(s string) int32 {
	if i, ok := t.idx[s]; ok {
		return i
	}
	if t.idx == nil {
		t.idx = make(map[string]int32)
	}
	i := int32(len(t.list))
	t.list = append(t.list, s)
	t.idx[s] = i
	return i
}

// List returns the strings in index order.
func (t *Strings) List() []string { return t.list }

// Len returns the number of strings.
func (t *Strings) Len() int { return len(t.list) }

// Reset empties the table, keeping its memory for reuse.
func (t *Strings) Reset() {
	t.list = t.list[:0]
	clear(t.idx)
}
