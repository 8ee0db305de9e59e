package store

import "context"

var sqlDatabaseIdentity = queryOf[identityRow]("database_identity")

// identityRow is the row of database_identity.
type identityRow struct {
	System   string `db:"system"`
	Database string `db:"database"`
}

// Identity names the database the store writes to: the PostgreSQL cluster's system identifier
// and the database's name (with Schema, what the spool records as its owner).
func (s *Store) Identity(ctx context.Context) (system, database string, err error) {
	err = s.queryRows(ctx, sqlDatabaseIdentity.sql, nil, sqlDatabaseIdentity.each(func(r identityRow) {
		system, database = r.System, r.Database
	}))
	return system, database, err
}
