package config

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// lineIndex maps field paths ("targets[0].url") to the line where they appear
// in the file, so that errors found after decoding can still name a line.
type lineIndex struct {
	lines map[string]int
	root  int
}

// maxIndexNodes bounds the work of indexing a file full of aliases.
const maxIndexNodes = 100000

// newLineIndex indexes the document's mapping keys and sequence elements.
// Aliases and merge keys are followed, within a node budget.
func newLineIndex(root *yaml.Node) *lineIndex {
	ix := &lineIndex{lines: map[string]int{}, root: root.Line}
	budget := maxIndexNodes
	ix.add(root, "", &budget)
	return ix
}

func (ix *lineIndex) add(n *yaml.Node, path string, budget *int) {
	n = resolveAlias(n)
	if n == nil || *budget <= 0 {
		return
	}
	*budget--
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMergeKey(k) {
				for _, src := range mergeSources(v) {
					ix.add(src, path, budget)
				}
				continue
			}
			p := joinPath(path, k.Value)
			if _, ok := ix.lines[p]; !ok {
				ix.lines[p] = k.Line
			}
			ix.add(v, p, budget)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			p := indexPath(path, i)
			if _, ok := ix.lines[p]; !ok {
				ix.lines[p] = e.Line
			}
			ix.add(e, p, budget)
		}
	}
}

// present reports whether the path appears in the file.
func (ix *lineIndex) present(path string) bool {
	_, ok := ix.lines[path]
	return ok
}

// line returns the line of the path, or of its nearest ancestor that appears
// in the file (a missing field is reported where its parent is).
func (ix *lineIndex) line(path string) int {
	for path != "" {
		if l, ok := ix.lines[path]; ok {
			return l
		}
		path = parentPath(path)
	}
	return ix.root
}

// parentPath drops the last element of a path: "a.b[2]" -> "a.b" -> "a".
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// joinPath appends a mapping key to a path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends a sequence index to a path.
func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// resolveAlias follows alias nodes to the node they name.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// isMergeKey reports whether a mapping key is YAML's "<<" merge key.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "")
}

// mergeSources returns the nodes a merge key's value merges in: one mapping
// or a sequence of them.
func mergeSources(v *yaml.Node) []*yaml.Node {
	v = resolveAlias(v)
	if v == nil {
		return nil
	}
	if v.Kind == yaml.SequenceNode {
		return v.Content
	}
	return []*yaml.Node{v}
}
