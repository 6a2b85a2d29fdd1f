package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gprof-dev/gprof/profile"
)

// Tree is a profile's call tree: one root per thread name (threads of the
// same name merged, as flame graph tools merge by command name, but those
// of different processes apart), then
// functions from the outermost caller inward, inline levels as their own
// nodes. Counts are weighted samples.
type Tree struct {
	Nodes []Node
	// Roots lists the root nodes, most samples first.
	Roots []int32
	// Samples is the weight of all samples.
	Samples int64
}

// Node is one call path's last function.
type Node struct {
	Name     string
	Lib      string
	Parent   int32 // -1 for roots
	Self     int64
	Total    int64
	Children []int32 // most samples first
}

type treeKey struct {
	parent int32
	fn     int32
}

// BuildTree builds p's call tree.
func BuildTree(p *profile.Profile) *Tree { return BuildTreeOptions(p, Options{}) }

// BuildTreeOptions builds p's call tree; of opts, only NoInline applies.
//
// Roots are thread names, threads of one name merged, unless threads of
// that name ran in more than one process: then each process's threads of
// the name have a root of their own, "sort (pid 4242)", so that the two
// sorts of a pipeline stay apart.
func BuildTreeOptions(p *profile.Profile, opts Options) *Tree {
	b := newBuilder(p)
	b.noInline = opts.NoInline
	pids := map[string]map[int]bool{}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			l := threadLabel(pr, th)
			if pids[l] == nil {
				pids[l] = map[int]bool{}
			}
			pids[l][pr.Pid] = true
		}
	}
	rootLabel := func(pr *profile.Process, th *profile.Thread) string {
		l := threadLabel(pr, th)
		if len(pids[l]) > 1 {
			l += " (pid " + strconv.Itoa(pr.Pid) + ")"
		}
		return l
	}
	b.kernel, b.kernOK = p.Symbols.KernelLib()
	t := &Tree{}
	index := map[treeKey]int32{}
	child := func(parent, fn int32) int32 {
		k := treeKey{parent, fn}
		if n, ok := index[k]; ok {
			return n
		}
		n := int32(len(t.Nodes))
		key := b.fns[fn]
		t.Nodes = append(t.Nodes, Node{Name: key.name, Lib: key.lib, Parent: parent})
		index[k] = n
		return n
	}
	for _, pr := range p.Processes {
		if pr == nil {
			continue
		}
		libs := sortedLibs(pr)
		for _, th := range pr.Threads {
			if th == nil {
				continue
			}
			root := child(-1, b.fn(fnKey{name: rootLabel(pr, th), lib: "\x00thread"}, ""))
			b.treeThread(t, libs, th, root, child)
		}
	}
	// Nodes are created parents first, so one backward pass sums totals.
	for i := len(t.Nodes) - 1; i >= 0; i-- {
		n := &t.Nodes[i]
		n.Total += n.Self
		if n.Parent >= 0 {
			t.Nodes[n.Parent].Total += n.Total
			t.Nodes[n.Parent].Children = append(t.Nodes[n.Parent].Children, int32(i))
		} else {
			t.Roots = append(t.Roots, int32(i))
			t.Samples += n.Total
		}
	}
	byTotal := func(a, b int32) int {
		na, nb := &t.Nodes[a], &t.Nodes[b]
		return cmp.Or(cmp.Compare(nb.Total, na.Total), cmp.Compare(na.Name, nb.Name), cmp.Compare(a, b))
	}
	slices.SortFunc(t.Roots, byTotal)
	for i := range t.Nodes {
		slices.SortFunc(t.Nodes[i].Children, byTotal)
	}
	for i := range t.Nodes {
		if t.Nodes[i].Lib == "\x00thread" {
			t.Nodes[i].Lib = ""
		}
	}
	return t
}

func threadLabel(pr *profile.Process, th *profile.Thread) string {
	if th.Name != "" {
		return th.Name
	}
	if pr.Name != "" {
		return pr.Name
	}
	return "?"
}

// treeThread adds th's samples under root. A stack's node as a caller
// (every frame but a sample's leaf) is memoized per stack index; the leaf
// frame is resolved as the sample's own address.
func (b *builder) treeThread(t *Tree, libs []profile.Lib, th *profile.Thread, root int32, child func(parent, fn int32) int32) {
	st := &th.Stacks
	ns := st.Len()
	weights := make([]int64, ns)
	var noStack int64
	sm := &th.Samples
	for i, s := range sm.Stack {
		w := int64(1)
		if sm.Weight != nil && i < len(sm.Weight) {
			w = int64(sm.Weight[i])
		}
		if s >= 0 && int(s) < ns {
			weights[s] += w
		} else {
			noStack += w
		}
	}
	t.Nodes[root].Self += noStack
	asCaller := make([]int32, ns) // node+1, 0 = not yet
	nf := th.Frames.Len()
	path := func(parent int32, f int32, caller bool) int32 {
		if f < 0 || int(f) >= nf {
			return parent
		}
		for _, l := range b.levels(libs, th.Frames.Frames[f], caller) {
			parent = child(parent, l.fn)
		}
		return parent
	}
	var callerNode func(s int32) int32
	callerNode = func(s int32) int32 {
		// Iterative over the prefix chain: deep stacks must not recurse.
		var chain []int32
		for x := s; x >= 0 && int(x) < ns && asCaller[x] == 0 && len(chain) <= ns; x = st.Prefix[x] {
			chain = append(chain, x)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			x := chain[i]
			parent := root
			if p := st.Prefix[x]; p >= 0 && int(p) < ns && asCaller[p] != 0 {
				parent = asCaller[p] - 1
			}
			asCaller[x] = path(parent, st.Frame[x], true) + 1
		}
		if s < 0 || int(s) >= ns || asCaller[s] == 0 {
			return root
		}
		return asCaller[s] - 1
	}
	for s := int32(0); int(s) < ns; s++ {
		w := weights[s]
		if w == 0 {
			continue
		}
		parent := root
		if p := st.Prefix[s]; p >= 0 {
			parent = callerNode(p)
		}
		leaf := path(parent, st.Frame[s], false)
		t.Nodes[leaf].Self += w
	}
}

// WriteCollapsed writes t as folded stacks, one line per call path with
// self samples: "thread;outer;...;leaf COUNT", the input of flamegraph.pl,
// inferno and speedscope. The counts add up to all samples. Semicolons in
// names become colons and control characters are escaped, so every line
// parses.
func WriteCollapsed(w io.Writer, t *Tree) error {
	bw := bufio.NewWriter(w)
	var names []string
	var walk func(n int32)
	walk = func(n int32) {
		node := &t.Nodes[n]
		names = append(names, foldedName(node.Name))
		if node.Self > 0 {
			bw.WriteString(strings.Join(names, ";"))
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatInt(node.Self, 10))
			bw.WriteByte('\n')
		}
		for _, c := range node.Children {
			walk(c)
		}
		names = names[:len(names)-1]
	}
	for _, r := range t.Roots {
		walk(r)
	}
	return bw.Flush()
}

func foldedName(s string) string {
	s = Printable(s)
	return strings.ReplaceAll(s, ";", ":")
}

// TreeOptions controls WriteTree.
type TreeOptions struct {
	// Depth is the deepest level printed below the thread roots; 0 means
	// no limit.
	Depth int
	// MinPct hides nodes with less than this percentage of all samples.
	MinPct float64
	// Width truncates lines to this many columns; 0 means no limit.
	Width int
}

// WriteTree writes t as an indented call tree: total and self share of
// all samples, then the function, children by most samples first.
func WriteTree(w io.Writer, t *Tree, o TreeOptions) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(Truncate(fmt.Sprintf("%8s %8s  %s", "total", "self", "function"), o.Width))
	bw.WriteByte('\n')
	var walk func(n int32, depth int, indent string)
	walk = func(n int32, depth int, indent string) {
		node := &t.Nodes[n]
		if pct(node.Total, t.Samples) < o.MinPct {
			return
		}
		name := Printable(node.Name)
		if node.Lib != "" {
			name += "  " + LibLabel(Printable(node.Lib))
		}
		line := fmt.Sprintf("%8s %8s  %s%s", pctString(pct(node.Total, t.Samples)), pctString(pct(node.Self, t.Samples)), indent, name)
		bw.WriteString(Truncate(line, o.Width))
		bw.WriteByte('\n')
		if o.Depth > 0 && depth >= o.Depth {
			if len(node.Children) > 0 {
				bw.WriteString(Truncate(fmt.Sprintf("%8s %8s  %s  …", "", "", indent), o.Width))
				bw.WriteByte('\n')
			}
			return
		}
		for _, c := range node.Children {
			walk(c, depth+1, indent+"  ")
		}
	}
	for _, r := range t.Roots {
		walk(r, 0, "")
	}
	return bw.Flush()
}
