package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/spool"
)

// A spool belongs to one database (docs/api/operations.md §4.2): a broker started on a spool
// holding pushes written for another database refuses to start, saying whose they are and how
// many; one started on an empty spool records its own database as the owner.
func TestBrokerRefusesASpoolOfAnotherDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sp, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sp.Append(ctx, []spool.Record{{Queue: "q", Partition: "p", MessageID: "019a0000-0000-7000-8000-000000000001",
		Key: "k", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := sp.Claim(spool.Owner{System: "1234567890", Database: "elsewhere", Schema: "theirs"}); err != nil {
		t.Fatal(err)
	}
	sp.Close()

	cfg := productionConfig(t, testDSN, freshSchema("owner"))
	cfg.FileBufferDir = dir
	a, err := app.New(ctx, cfg, app.WithLogger(quietLogger()))
	if err == nil {
		a.Stop()
		t.Fatal("the broker started on a spool of another database")
	}
	for _, want := range []string{`"elsewhere"`, `"theirs"`, "1 pushes", "FILE_BUFFER_DIR", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %s: %v", want, err)
		}
	}

	own := productionConfig(t, testDSN, freshSchema("owner"))
	startApp(t, own, app.WithLogger(quietLogger()))
	b, err := os.ReadFile(filepath.Join(own.FileBufferDir, "owner.json"))
	if err != nil || !strings.Contains(string(b), `"schema":"`+own.DBSchema+`"`) {
		t.Errorf("owner of a new spool: %s %v, want this broker's database and schema", b, err)
	}
}
