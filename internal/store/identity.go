package store

import "context"

var sqlDatabaseIdentity = query("database_identity")

// Identity names the database the store writes to: the PostgreSQL cluster's system identifier
// and the database's name (with Schema, what the spool records as its owner).
func (s *Store) Identity(ctx context.Context) (system, database string, err error) {
	err = s.queryRows(ctx, sqlDatabaseIdentity, nil, func(r rowScanner) error {
		return r.Scan(&system, &database)
	})
	return system, database, err
}
