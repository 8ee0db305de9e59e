package broker

import "strings"

// DeriveLabels returns a queue's default namespace and task (concepts.md §2.1): namespace is
// the text before the first dot (the whole name without one), task the text between the
// first and second dot ("" without a dot).
func DeriveLabels(name string) (namespace, task string) {
	ns, rest, found := strings.Cut(name, ".")
	if !found {
		return name, ""
	}
	task, _, _ = strings.Cut(rest, ".")
	return ns, task
}
