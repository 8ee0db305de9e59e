package store

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// columnsRow is a row with the given columns whose Scan assigns nothing, so a benchmark over
// it times only the Go side of reading a row: matching columns to fields and building the
// scan targets.
type columnsRow struct{ fields []pgconn.FieldDescription }

func newColumnsRow(names ...string) columnsRow {
	r := columnsRow{make([]pgconn.FieldDescription, len(names))}
	for i, n := range names {
		r.fields[i].Name = n
	}
	return r
}

func (r columnsRow) FieldDescriptions() []pgconn.FieldDescription { return r.fields }
func (columnsRow) Values() ([]any, error)                         { return nil, nil }
func (columnsRow) RawValues() [][]byte                            { return nil }

//go:noinline
func (r columnsRow) Scan(dest ...any) error {
	if len(dest) != len(r.fields) {
		panic("scan targets do not match the columns")
	}
	return nil
}

// BenchmarkRowRead times what reading a hot-path row by name costs in Go over reading it by
// position: one row of qg_push (8 columns), qg_pop (12) and qg_ack_items (7), each read into
// its row type by name (pgx.RowToStructByName, which caches the column-to-field mapping per
// row type and column list), by the reader the hot path uses (the mapping kept for the
// result's later rows), and scanned into the same fields by position. Database time is
// left out (the row's Scan assigns nothing); compare the difference with a call's time in
// BenchmarkHotPath.
func BenchmarkRowRead(b *testing.B) {
	push := newColumnsRow("i", "status", "mid", "pid", "pos", "qid", "qname", "pname")
	pop := newColumnsRow("req", "id", "transaction_id", "trace_id", "payload", "producer_sub", "created_at",
		"partition_id", "partition_name", "queue_name", "retry_count", "encrypted")
	ack := newColumnsRow("success", "error", "queue_name", "partition_name", "lease_released", "dlq", "already_committed")
	b.Run("push/name", func(b *testing.B) {
		for b.Loop() {
			if _, err := pushRows.row(push); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("push/reader", func(b *testing.B) {
		read := pushRows.reader()
		for b.Loop() {
			if _, err := read(push); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("push/position", func(b *testing.B) {
		for b.Loop() {
			var p pushRow
			if err := push.Scan(&p.I, &p.Status, &p.MID, &p.PID, &p.Pos, &p.QID, &p.QName, &p.PName); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pop/name", func(b *testing.B) {
		for b.Loop() {
			if _, err := popRows.row(pop); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pop/reader", func(b *testing.B) {
		read := popRows.reader()
		for b.Loop() {
			if _, err := read(pop); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pop/position", func(b *testing.B) {
		for b.Loop() {
			var m popRow
			if err := pop.Scan(&m.Req, &m.ID, &m.TransactionID, &m.TraceID, &m.Payload, &m.ProducerSub, &m.CreatedAt,
				&m.PartitionID, &m.Partition, &m.Queue, &m.RetryCount, &m.Encrypted); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ack/name", func(b *testing.B) {
		for b.Loop() {
			if _, err := ackRows.row(ack); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ack/reader", func(b *testing.B) {
		read := ackRows.reader()
		for b.Loop() {
			if _, err := read(ack); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ack/position", func(b *testing.B) {
		for b.Loop() {
			var r ackRow
			if err := ack.Scan(&r.Success, &r.Error, &r.Queue, &r.Partition, &r.LeaseReleased, &r.DLQ, &r.AlreadyCommitted); err != nil {
				b.Fatal(err)
			}
		}
	})
}
