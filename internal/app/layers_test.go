package app

import (
	"os/exec"
	"strings"
	"testing"
)

// The floor plan holds in the import graph: the wire layer reaches neither the store nor the
// database driver (nor the broker and read side it is handed as interfaces), and the
// vocabulary imports nothing of ours. A new import that breaks a layer fails here.
func TestLayersImportOnlyWhatTheyMay(t *testing.T) {
	const mod = "github.com/queen-go/queen/"
	cases := []struct {
		pkg       string
		forbidden []string
	}{
		{"internal/httpapi", []string{"internal/store", "internal/broker", "internal/admin", "internal/maintenance",
			"internal/metrics", "internal/waiter", "github.com/jackc/pgx"}},
		{"internal/mq", []string{"internal/"}},
		{"internal/broker", []string{"internal/httpapi", "internal/admin", "net/http"}},
		{"internal/admin", []string{"internal/httpapi", "internal/broker", "net/http"}},
		{"internal/store", []string{"internal/httpapi", "internal/broker", "internal/admin"}},
	}
	for _, c := range cases {
		out, err := exec.Command("go", "list", "-deps", mod+c.pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", c.pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == mod+c.pkg {
				continue
			}
			for _, f := range c.forbidden {
				if strings.HasPrefix(f, "internal/") {
					f = mod + f // ours, not the standard library's internal packages
				}
				if dep == f || strings.HasPrefix(dep, f+"/") || strings.HasPrefix(dep, f) && strings.HasSuffix(f, "/") {
					t.Errorf("%s imports %s", c.pkg, dep)
				}
			}
		}
	}
}

// The request budget sits below the broker and the store, which both draw on it: it imports
// the standard library and the vocabulary, nothing else of ours or of anyone's.
func TestBudgetImportsOnlyTheVocabulary(t *testing.T) {
	const mod = "github.com/queen-go/queen/"
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, mod+"internal/budget").Output()
	if err != nil {
		t.Fatalf("go list internal/budget: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp != mod+"internal/mq" && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			t.Errorf("internal/budget imports %s", imp)
		}
	}
}
