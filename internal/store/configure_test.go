package store

import (
	"context"
	"testing"

	"github.com/queen-go/queen/internal/mq"
)

// Every option of mq.OptionTable reaches its column through qg_configure: a value that differs
// from every default for each option is read back column by column.
func TestConfigureStoresEveryOptionInItsColumn(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "configure_options")
	var opts mq.QueueOptions
	for i, o := range mq.OptionTable {
		if o.IsBool() {
			*o.Bool(&opts) = o.Default == 0
		} else {
			*o.Int(&opts) = 10_000 + i
		}
	}
	if _, _, err := s.Configure(ctx, "opts", "ns", "task", opts); err != nil {
		t.Fatal(err)
	}
	for i, o := range mq.OptionTable {
		var got any
		if err := s.pool.QueryRow(ctx, "SELECT "+quoteIdent(o.Column)+" FROM queues WHERE name = 'opts'").Scan(&got); err != nil {
			t.Fatalf("%s: column %s: %v", o.Key, o.Column, err)
		}
		var want any = int32(10_000 + i)
		if o.IsBool() {
			want = o.Default == 0
		}
		if got != want {
			t.Errorf("%s: column %s holds %v (%T), want %v", o.Key, o.Column, got, got, want)
		}
	}
}
