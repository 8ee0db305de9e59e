package queen

import (
	"context"
	"net/http"
)

// Maintenance is the broker's maintenance state (GET /api/v1/system/maintenance,
// docs/api/admin-api.md §9): push maintenance sends every push to the spool, pop maintenance
// answers every pop empty; both hold on every instance. The buffer figures are the answering
// instance's spool.
type Maintenance struct {
	Push             bool `json:"maintenanceMode"`
	Pop              bool `json:"popMaintenanceMode"`
	BufferedMessages int  `json:"bufferedMessages"`
	BufferHealthy    bool `json:"bufferHealthy"`
}

// Maintenance reads both maintenance modes and the answering instance's spool figures. Without
// a database the broker answers with the last values it knew.
func (c *Client) Maintenance(ctx context.Context) (Maintenance, error) {
	var m Maintenance
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/system/maintenance"}, &m)
	return m, err
}

// SetMaintenance turns push maintenance (pop false) or pop maintenance (pop true) on or off,
// for every instance, and returns the state afterwards. It needs the database.
func (c *Client) SetMaintenance(ctx context.Context, pop, enabled bool) (Maintenance, error) {
	path := "/api/v1/system/maintenance"
	if pop {
		path += "/pop"
	}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: path, body: map[string]bool{"enabled": enabled}}, nil); err != nil {
		return Maintenance{}, err
	}
	return c.Maintenance(ctx)
}
