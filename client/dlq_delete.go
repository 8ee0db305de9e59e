package queen

import (
	"context"
	"net/http"
	"time"
)

// DLQSelection names dead-letter entries for DeleteDLQ and RequeueDLQ: by IDs, or else by
// filter (empty fields match anything), oldest first, at most Limit (0: the broker's default).
type DLQSelection struct {
	IDs []string

	Queue, ConsumerGroup, Partition, Error string
	From, To                               time.Time
	Limit                                  int
}

// body is the selection as the request body of the DLQ routes (docs/api/admin-api.md §3.2-3.3).
func (s DLQSelection) body() map[string]any {
	body := map[string]any{}
	if s.IDs != nil {
		body["ids"] = s.IDs
		return body
	}
	f := map[string]string{}
	for k, v := range map[string]string{"queue": s.Queue, "consumerGroup": s.ConsumerGroup,
		"partition": s.Partition, "error": s.Error} {
		if v != "" {
			f[k] = v
		}
	}
	if !s.From.IsZero() {
		f["from"] = FromTime(s.From)
	}
	if !s.To.IsZero() {
		f["to"] = FromTime(s.To)
	}
	body["filter"] = f
	if s.Limit > 0 {
		body["limit"] = s.Limit
	}
	return body
}

// DLQDeleteResult is the broker's answer to a deletion.
type DLQDeleteResult struct {
	Deleted   int `json:"deleted"`
	Remaining int `json:"remaining"` // by filter: matching entries still left
	Skipped   []struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	} `json:"skipped"`
}

// DeleteDLQ deletes dead-letter entries. Repeating a call is safe: deleted entries are
// reported "DLQ entry not found" (by id) or no longer match (by filter).
func (c *Client) DeleteDLQ(ctx context.Context, d DLQSelection) (*DLQDeleteResult, error) {
	body := d.body()
	var res DLQDeleteResult
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/dlq/delete", body: body}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
