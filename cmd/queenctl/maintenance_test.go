package main

import (
	"strings"
	"testing"
)

func TestMaintenance(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "", "maintenance").want(t, exitOK)
	golden(t, "maintenance_table", r.stdout)
	r = b.ctl(t, "", "maintenance", "on", "-o", "json").want(t, exitOK)
	golden(t, "maintenance_on_json", r.stdout)
	b.ctl(t, "", "push", "maint", `{"n":1}`).want(t, exitOK) // spooled: buffered
	r = b.ctl(t, "", "maintenance", "on", "--pop").want(t, exitOK)
	if !strings.Contains(r.stdout, "pop     on") {
		t.Errorf("pop maintenance on:\n%s", r.stdout)
	}
	b.ctl(t, "", "maintenance", "off", "--pop").want(t, exitOK)
	r = b.ctl(t, "", "maintenance", "off", "-o", "json").want(t, exitOK)
	if !strings.Contains(r.stdout, `"maintenanceMode": false`) || !strings.Contains(r.stdout, `"popMaintenanceMode": false`) {
		t.Errorf("off: %s", r.stdout)
	}
	for args, want := range map[string]string{"maintenance maybe": `want on or off, got "maybe"`,
		"maintenance --pop": "--pop goes with on or off", "maintenance on off": "got 2 argument(s)"} {
		if r := b.ctl(t, "", strings.Fields(args)...).want(t, exitUsage); !strings.Contains(r.stderr, want) {
			t.Errorf("%s: %q", args, r.stderr)
		}
	}
}
