package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testserver"
)

// GET and DELETE /api/v1/messages/:partitionId/:transactionId (docs/api/admin-api.md §2.2, §2.3).

func TestAdminMessageDetail(t *testing.T) {
	b := admSetup(t, testserver.Options{EncryptionKey: encKey})
	group := "g-" + b.queue
	b.admConfigure(obj{"encryptionEnabled": true, "leaseTime": 120, "retryLimit": 5, "retryDelay": 10,
		"ttl": 60, "priority": 2})
	res := b.push("p", obj{"transactionId": "m1", "payload": obj{"secret": "s1"}},
		obj{"transactionId": "m2", "payload": []int{2}})
	pid := res[0].PartitionID
	g := b.admPop("p", group, 2) // the named group holds both
	b.admAckAll(b.admPop("p", "", 1), "dlq", "")

	d := admGet(b, "/api/v1/messages/"+pid+"/m1")
	admShape(t, d, "id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace", "task",
		"status", "payload", "isEncrypted", "traceId", "producerSub", "createdAt", "errorMessage", "retryCount",
		"leaseExpiresAt", "queueConfig", "mode", "consumerGroups")
	if d["id"] != res[0].MessageID || d["transactionId"] != "m1" || d["partitionId"] != pid ||
		d["queuePath"] != b.queue+"/p" || d["status"] != "dead_letter" || d["isEncrypted"] != true ||
		!admEqualJSON(d["payload"], `{"secret":"s1"}`) || d["errorMessage"] != "boom m1" ||
		admNum(t, d["retryCount"]) != 0 || d["traceId"] != nil || d["producerSub"] != nil {
		t.Fatalf("detail %v", d)
	}
	admSameMilli(t, d["createdAt"], g.Messages[0].CreatedAt)
	if !admTime(t, d["leaseExpiresAt"]).After(time.Now().Add(100 * time.Second)) {
		t.Fatalf("leaseExpiresAt %v: the named group's live lease holds m1", d["leaseExpiresAt"])
	}
	if !admEqualJSON(d["queueConfig"], `{"leaseTime":120,"retryLimit":5,"retryDelay":10,"ttl":60,"priority":2}`) {
		t.Fatalf("queueConfig %v", d["queueConfig"])
	}
	if !admEqualJSON(d["mode"], `{"hasQueueMode":true,"busGroupsCount":1,"consumedByGroups":1,"type":"hybrid"}`) {
		t.Fatalf("mode %v: queue mode consumed m1 (dead-lettered), the named group did not", d["mode"])
	}
	groups := admList(t, d["consumerGroups"])
	if len(groups) != 2 {
		t.Fatalf("consumerGroups %v", groups)
	}
	for _, c := range groups {
		admShape(t, c, "name", "consumed", "leaseExpiresAt")
		switch c["name"] {
		case "__QUEUE_MODE__":
			if c["consumed"] != true || c["leaseExpiresAt"] != nil {
				t.Fatalf("queue mode %v", c)
			}
		case group:
			if c["consumed"] != false || c["leaseExpiresAt"] == nil {
				t.Fatalf("named group %v", c)
			}
		default:
			t.Fatalf("unexpected consumer %v", c)
		}
	}
	if d2 := admGet(b, "/api/v1/messages/"+pid+"/m2"); d2["status"] != "processing" || d2["errorMessage"] != nil ||
		!admEqualJSON(d2["payload"], `[2]`) {
		t.Fatalf("m2 %v", d2)
	}

	for _, path := range []string{"/api/v1/messages/" + pid + "/m9", "/api/v1/messages/not-a-uuid/m1",
		"/api/v1/messages/" + res[0].MessageID + "/m1"} {
		admError(b, "GET", path, nil, http.StatusNotFound, `{"error":"Message not found"}`)
	}
}

func TestAdminDeleteMessage(t *testing.T) {
	b := admSetup(t, testserver.Options{FakeClock: true})
	group, name := "g-"+b.queue, "n-"+b.queue
	b.admConfigure(obj{"dedupWindowSeconds": 60})
	res := b.admPushKeys("p", "m1", "m2")
	pid := res[0].PartitionID
	b.admAckAll(b.admPop("p", group, 1), "dlq", group) // m1 has a DLQ entry
	b.admTrace(obj{"transactionId": "m1", "partitionId": pid, "data": 1, "traceNames": name})

	path := "/api/v1/messages/" + pid + "/m1"
	out := admJSON[obj](b, http.StatusOK, "DELETE", path, nil)
	if !admEqualJSON(out, `{"success":true,"partitionId":"`+pid+`","transactionId":"m1","message":"Message deleted successfully"}`) {
		t.Fatalf("delete: %v", out)
	}
	admError(b, "GET", path, nil, http.StatusNotFound, `{"error":"Message not found"}`)
	if _, total, _ := b.admDLQ(admQuery("consumerGroup", group)); total != 0 {
		t.Fatalf("the DLQ entry of a deleted message survived (%d)", total)
	}
	if tr := admGet(b, "/api/v1/traces/by-name/"+url.PathEscape(name)); admNum(t, tr["total"]) != 0 {
		t.Fatalf("trace records of a deleted message survived: %v", tr)
	}
	// Consumers never see it again: queue mode starts at m2.
	if got := admKeys(b.admPop("p", "", 10)); len(got) != 1 || got[0] != "m2" {
		t.Fatalf("queue mode got %v, want [m2]", got)
	}

	for _, p := range []string{path, "/api/v1/messages/not-a-uuid/m1"} {
		again := admJSON[obj](b, http.StatusOK, "DELETE", p, nil)
		if again["success"] != false || again["message"] != "Message not found" {
			t.Fatalf("delete %s again: %v", p, again)
		}
	}
	if again := admJSON[obj](b, http.StatusOK, "DELETE", "/api/v1/messages/not-a-uuid/m1", nil); again["partitionId"] != "not-a-uuid" {
		t.Fatalf("the answer echoes the ids given: %v", again)
	}

	// The key stays taken, by the deleted message, until its dedup window ends.
	if r := b.admPushKeys("p", "m1"); r[0].Status != "duplicate" || r[0].MessageID != res[0].MessageID {
		t.Fatalf("push of a deleted key within its window: %+v", r[0])
	}
	b.srv.Clock.Advance(61 * time.Second)
	if r := b.admPushKeys("p", "m1"); r[0].Status != "queued" || r[0].MessageID == res[0].MessageID {
		t.Fatalf("push of a deleted key after its window: %+v", r[0])
	}
}
