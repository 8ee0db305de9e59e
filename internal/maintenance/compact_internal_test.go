package maintenance

import (
	"testing"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// A horizon counts as held once a session's snapshot is older than compactPinnedAfter, or
// while a replication slot or walsender holds an xmin; a logical slot's catalog_xmin and a
// hidden holder (age unknown) do not.
func TestHorizonHeld(t *testing.T) {
	old := compactPinnedAfter.Seconds() + 1
	xids := int64(1000)
	for _, c := range []struct {
		name string
		h    mq.XminHorizon
		want bool
	}{
		{"nothing held", mq.XminHorizon{}, false},
		{"a young snapshot", mq.XminHorizon{Holder: &mq.XminHolder{AgeSeconds: 1}}, false},
		{"an old snapshot", mq.XminHorizon{Holder: &mq.XminHolder{AgeSeconds: old}}, true},
		{"a hidden holder (its age unknown)", mq.XminHorizon{Holder: &mq.XminHolder{Hidden: true, XidAge: 1e6}}, false},
		{"a physical slot fed by a standby", mq.XminHorizon{Replication: []mq.ReplicationHorizon{
			{Name: "s", Type: "physical", XminAge: &xids}}}, true},
		{"a standby's feedback without a slot", mq.XminHorizon{Replication: []mq.ReplicationHorizon{
			{Name: "walsender 7", Type: "walsender", XminAge: &xids}}}, true},
		{"a logical slot's catalog_xmin", mq.XminHorizon{Replication: []mq.ReplicationHorizon{
			{Name: "cdc", Type: "logical", CatalogXminAge: &xids}}}, false},
		{"a logical slot and a physical one", mq.XminHorizon{Replication: []mq.ReplicationHorizon{
			{Name: "cdc", Type: "logical", CatalogXminAge: &xids}, {Name: "s", Type: "physical", XminAge: &xids}}}, true},
	} {
		if got := horizonHeld(c.h); got != c.want {
			t.Errorf("%s: horizonHeld = %v, want %v", c.name, got, c.want)
		}
	}
}

// A set is worth a rewrite once its dead versions reach both thresholds.
func TestDeadEnough(t *testing.T) {
	for _, c := range []struct {
		name string
		h    store.HotSet
		want bool
	}{
		{"many dead", store.HotSet{Live: 200, Dead: compactMinDead}, true},
		{"below the floor", store.HotSet{Live: 10, Dead: compactMinDead - 1}, false},
		{"below five per live row", store.HotSet{Live: 1000, Dead: 4999}, false},
		{"five per live row", store.HotSet{Live: 1000, Dead: 5000}, true},
	} {
		if got := deadEnough(c.h); got != c.want {
			t.Errorf("%s: deadEnough(%+v) = %v, want %v", c.name, c.h, got, c.want)
		}
	}
}
