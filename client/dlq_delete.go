package queen

import (
	"context"
	"net/http"
	"time"
)

// DLQDelete selects dead-letter entries to delete (POST /api/v1/dlq/delete): by IDs (their
// DLQ ids), or, when IDs is nil, every entry matching the filter fields (all of them when every
// field is empty), up to Limit (default and maximum 1000), oldest failure first. Deleting an
// entry leaves its message, if still stored, as it is.
type DLQDelete struct {
	IDs []string

	Queue, ConsumerGroup, Partition, Error string
	From, To                               time.Time
	Limit                                  int
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
func (c *Client) DeleteDLQ(ctx context.Context, d DLQDelete) (*DLQDeleteResult, error) {
	body := map[string]any{}
	if d.IDs != nil {
		body["ids"] = d.IDs
	} else {
		f := map[string]string{}
		for k, v := range map[string]string{"queue": d.Queue, "consumerGroup": d.ConsumerGroup,
			"partition": d.Partition, "error": d.Error} {
			if v != "" {
				f[k] = v
			}
		}
		if !d.From.IsZero() {
			f["from"] = FromTime(d.From)
		}
		if !d.To.IsZero() {
			f["to"] = FromTime(d.To)
		}
		body["filter"] = f
		if d.Limit > 0 {
			body["limit"] = d.Limit
		}
	}
	var res DLQDeleteResult
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/dlq/delete", body: body}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
