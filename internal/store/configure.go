package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queen-go/queen/internal/mq"
)

// Configure creates the queue or replaces its configuration, and ensures partition Default.
// It returns the queue id and the Default partition id.
func (s *Store) Configure(ctx context.Context, name, namespace, task string, opts mq.QueueOptions) (queueID, partitionID string, err error) {
	err = s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		args := configureArgs{Name: name, Namespace: namespace, Task: task, Opts: opts}
		return c.QueryRow(ctx, sqlConfigure, args.args()...).Scan(&queueID, &partitionID)
	})
	if err != nil {
		return "", "", fmt.Errorf("configure %q: %w", name, err)
	}
	return queueID, partitionID, nil
}

const sqlConfigure = `SELECT queue_id::text, partition_id::text
	FROM qg_configure(p_name => $1, p_namespace => $2, p_task => $3, p_opts => $4)`

// configureArgs are the parameters of qg_configure (see sqlCall).
type configureArgs struct {
	Name, Namespace, Task string
	Opts                  mq.QueueOptions // sent as JSON
}

func (a configureArgs) args() []any { return []any{a.Name, a.Namespace, a.Task, a.Opts} }

// EncryptedQueues reports, for each named queue that exists, whether encryptionEnabled is set.
func (s *Store) EncryptedQueues(ctx context.Context, names []string) (map[string]bool, error) {
	out := make(map[string]bool, len(names))
	err := s.queryRows(ctx, "SELECT name, encryption_enabled FROM queues WHERE name = ANY($1)", []any{names},
		func(r rowScanner) error {
			var name string
			var on bool
			if err := r.Scan(&name, &on); err != nil {
				return err
			}
			out[name] = on
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read queue encryption: %w", err)
	}
	return out, nil
}

// QueuesWithEncryption lists the queues that have encryptionEnabled.
func (s *Store) QueuesWithEncryption(ctx context.Context) ([]string, error) {
	var out []string
	err := s.queryRows(ctx, "SELECT name FROM queues WHERE encryption_enabled ORDER BY name", nil,
		func(r rowScanner) error {
			var n string
			if err := r.Scan(&n); err != nil {
				return err
			}
			out = append(out, n)
			return nil
		})
	return out, err
}
