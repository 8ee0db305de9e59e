package store

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// uuidParam passes ids as a binary uuid[] parameter ("" or nil: NULL). pgx cannot encode Go
// strings as binary uuids: for every call it tried, built an error quoting the whole array,
// and fell back to text, which PostgreSQL then parsed element by element (a tenth of the
// broker's CPU on pushes of 100 items). A string that is not a canonical UUID keeps the
// whole array in text form, so PostgreSQL judges it exactly as before.
func uuidParam[S string | *string](ids []S) any {
	if ids == nil {
		return ids // NULL, not an empty array
	}
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		var s string
		switch v := any(id).(type) {
		case string:
			s = v
		case *string:
			if v != nil {
				s = *v
			}
		}
		if s == "" {
			continue
		}
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 {
			return ids
		}
		out[i] = pgtype.UUID{Bytes: u, Valid: true}
	}
	return out
}

// uuidArg passes one id as uuidParam passes each element: a binary uuid when canonical, NULL
// when "", and the text otherwise, for PostgreSQL to judge.
func uuidArg(id string) any {
	if id == "" {
		return nil
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return id
	}
	return pgtype.UUID{Bytes: u, Valid: true}
}

// uuidJSON is ids for a uuid[] field of a JSON call argument: "" (and nil) as null, as
// uuidParam passes them, every other string as it is, for PostgreSQL to judge; a nil slice is
// null, not an empty array.
func uuidJSON[S string | *string](ids []S) []*string {
	if ids == nil {
		return nil
	}
	out := make([]*string, len(ids))
	for i, id := range ids {
		switch v := any(id).(type) {
		case string:
			if v != "" {
				out[i] = &v
			}
		case *string:
			if v != nil && *v != "" {
				out[i] = v
			}
		}
	}
	return out
}
