package merge

import (
	"fmt"

	"github.com/pqsink/pqsink/schema"
)

// firstDifference describes the first column, in leaf order, in which b
// differs from a, or returns "" when the two schemas have the same tree
// (the message names aside): for each leaf, the names, repetitions,
// logical types and field ids of the nodes on its path, and its physical
// type.
func firstDifference(a, b *schema.Schema) string {
	la, lb := a.Leaves(), b.Leaves()
	for i := range max(len(la), len(lb)) {
		switch {
		case i >= len(la):
			return fmt.Sprintf("column %s is not in the first schema", lb[i].PathString())
		case i >= len(lb):
			return fmt.Sprintf("column %s is missing", la[i].PathString())
		}
		if d := pathDifference(la[i], lb[i]); d != "" {
			return fmt.Sprintf("column %s: %s", la[i].PathString(), d)
		}
	}
	return ""
}

// pathDifference compares two leaves and their ancestors.
func pathDifference(x, y *schema.Node) string {
	if x.PathString() != y.PathString() {
		return fmt.Sprintf("the other schema has %s in its place", y.PathString())
	}
	if x.Physical != y.Physical || x.Length != y.Length {
		return fmt.Sprintf("%s, the other schema's is %s", x.TypeName(), y.TypeName())
	}
	for ; x != nil && y != nil; x, y = x.Parent(), y.Parent() {
		where := ""
		if !x.IsLeaf() {
			where = " of group " + x.PathString()
		}
		switch {
		case x.Repetition != y.Repetition:
			return fmt.Sprintf("repetition%s %s, the other schema's is %s", where, x.Repetition, y.Repetition)
		case x.Logical != y.Logical || x.HasLegacy != y.HasLegacy || x.Legacy != y.Legacy:
			return fmt.Sprintf("logical type%s %s, the other schema's is %s", where, describeLogical(x), describeLogical(y))
		case x.HasFieldID != y.HasFieldID || (x.HasFieldID && x.FieldID != y.FieldID):
			return fmt.Sprintf("field id%s %s, the other schema's is %s", where, fieldID(x), fieldID(y))
		}
	}
	return ""
}

func describeLogical(n *schema.Node) string {
	s := n.Logical.String()
	if n.Logical.Kind == schema.None {
		s = "none"
	}
	if n.HasLegacy {
		s += fmt.Sprintf(" (converted %v)", n.Legacy)
	}
	return s
}

func fieldID(n *schema.Node) string {
	if !n.HasFieldID {
		return "none"
	}
	return fmt.Sprint(n.FieldID)
}
