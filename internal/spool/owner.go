package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Owner names the database a spool's records were written for: the PostgreSQL cluster (its
// system_identifier), the database and the schema. Records replayed into any other database
// would put one database's pushes into another (docs/api/operations.md §4.2).
type Owner struct {
	System   string `json:"systemIdentifier"`
	Database string `json:"database"`
	Schema   string `json:"schema"`
}

// String names the owner for a log line or an error.
func (o Owner) String() string {
	return fmt.Sprintf("database %q, schema %q of the PostgreSQL cluster with system identifier %s", o.Database, o.Schema, o.System)
}

// ownerFile holds the Owner as JSON, next to the spool files.
const ownerFile = "owner.json"

// OwnerError refuses a spool whose records belong to another database.
type OwnerError struct {
	Dir       string
	Recorded  Owner // whose records the spool holds
	Requested Owner // the database of the broker that asked
	Pending   int   // records not yet replayed
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("spool: %s holds %d pushes not yet replayed for %s, not for this broker's %s: "+
		"start the broker that owns them to replay them, or move the files away, or set FILE_BUFFER_DIR to another directory",
		e.Dir, e.Pending, e.Recorded, e.Requested)
}

// Claim records o as the owner of the spool's records. A spool whose pending records belong
// to another owner is refused with *OwnerError and left unchanged; a spool with nothing
// pending, or whose records were written before owners were recorded, or while no database
// was reachable, is claimed. The owner file is replaced atomically and made durable.
func (s *Spool) Claim(o Owner) error {
	s.rmu.Lock() // no Commit meanwhile: Pending cannot change under the check but by Appends
	defer s.rmu.Unlock()
	path := s.path(ownerFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("spool: read %s: %w", path, err)
	default:
		var rec Owner
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("spool: %s does not hold an owner: %w", path, err)
		}
		if rec == o {
			return nil
		}
		if n := s.Pending(); n > 0 {
			return &OwnerError{Dir: s.dir, Recorded: rec, Requested: o, Pending: n}
		}
	}
	b, err = json.Marshal(o)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("spool: write owner: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		return fmt.Errorf("spool: write owner: %w", err)
	}
	return nil
}
