package config

import (
	"os"
	"strings"
	"testing"
)

// Every variable the broker reads is listed in docs/api/operations.md §1.3, queen-go's own
// additions included (LOG_FORMAT, OTEL_*, PPROF_ADDR, PUSH_CONCURRENCY, CONSUME_CONCURRENCY),
// so the reference an operator reads cannot fall behind the configuration (the other direction is
// TestSpecVariablesCovered).
func TestOperationsTableListsEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../../docs/api/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "### 1.3 Environment variables")
	end := strings.Index(doc, "## 2. Database")
	if start < 0 || end < start {
		t.Fatal("operations.md has no §1.3 before §2")
	}
	section := doc[start:end]
	for _, v := range variables {
		if !strings.Contains(section, "| `"+v.name+"` |") {
			t.Errorf("%s is not a row of docs/api/operations.md §1.3", v.name)
		}
	}
}
