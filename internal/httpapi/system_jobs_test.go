package httpapi_test

import (
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// GET /api/v1/system/jobs (docs/api/admin-api.md §10.3, dashboard M12).
func TestSystemJobs(t *testing.T) {
	b := stIsolated(t, testserver.Options{FakeClock: true})
	b.lsRefresh() // one stats run recorded, by this instance

	out := admShape(t, admGet(b, "/api/v1/system/jobs"), "jobs", "timestamp")
	admTime(t, out["timestamp"])
	jobs := admList(t, out["jobs"])
	if got := admField(jobs, "name"); len(got) != 4 || got[0] != "retention" || got[1] != "eviction" ||
		got[2] != "lease_housekeeping" || got[3] != "stats" {
		t.Fatalf("jobs %v, want the four in operations.md §5's order", got)
	}
	keys := []string{"name", "intervalMs", "running", "leader", "lastRunAt", "lastDurationMs", "lastOutcome", "lastError",
		"lastSuccessAt", "lastFailureAt", "nextRunAt", "runs", "failures", "instances"}
	for _, j := range jobs {
		admShape(t, j, keys...)
		if admNum(t, j["intervalMs"]) < 0 || j["running"] != false {
			t.Fatalf("job %v", j)
		}
	}
	st := jobs[3]
	leader, _ := st["leader"].(string)
	if leader == "" || st["lastOutcome"] != "ok" || st["lastError"] != nil || st["lastFailureAt"] != nil ||
		admNum(t, st["runs"]) < 1 || admNum(t, st["failures"]) != 0 || admNum(t, st["lastDurationMs"]) < 0 {
		t.Fatalf("stats job %v", st)
	}
	admTime(t, st["lastRunAt"])
	admTime(t, st["lastSuccessAt"])
	inst := admList(t, st["instances"])
	if len(inst) != 1 || inst[0]["workerId"] != leader || admNum(t, inst[0]["runs"]) != admNum(t, st["runs"]) {
		t.Fatalf("instances %v", inst)
	}
	admShape(t, inst[0], "workerId", "hostname", "lastRunAt", "runs", "failures")
	// A job that never ran: nulls, no instances.
	if r := jobs[0]; admNum(t, r["runs"]) == 0 && (r["leader"] != nil || r["lastOutcome"] != nil ||
		r["lastDurationMs"] != nil || r["nextRunAt"] != nil || len(admList(t, r["instances"])) != 0) {
		t.Fatalf("retention before any run %v", r)
	}
}

func TestSystemJobsIsAdminOnly(t *testing.T) {
	b := authSetup(t, testserver.Options{})
	for role, want := range map[string]int{"read-only": 403, "read-write": 403, "admin": 200} {
		resp, body := authSend(t, "GET", b.srv.URL+"/api/v1/system/jobs", bearer(authRole(t, "u", role)), nil)
		if resp.StatusCode != want {
			t.Fatalf("%s: %d %s, want %d", role, resp.StatusCode, body, want)
		}
	}
}
