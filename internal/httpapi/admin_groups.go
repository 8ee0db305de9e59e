package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

// Consumer groups (docs/api/admin-api.md §7). The lagging listing answers in snake_case, the other
// routes in camelCase (docs/api/README.md §2.2).

// Consumer-group defaults.
const (
	defaultGroupLimit = 1000 // rows per page of every consumer-group listing

	defaultMinLagSeconds = 3600
)

type groupSummaryJSON struct {
	Name                  string   `json:"name"`
	Topics                []string `json:"topics"`
	QueueName             string   `json:"queueName"`
	Members               int64    `json:"members"`
	PartitionsWithLag     int64    `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"`
	State                 string   `json:"state"`
	SubscriptionMode      *string  `json:"subscriptionMode"`
	SubscriptionTimestamp msTime   `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt msTime   `json:"subscriptionCreatedAt"`
}

// listConsumerGroups serves GET /api/v1/consumer-groups (dashboard M8): an array still, as
// Queen's clients read it; a full page means there may be more.
func (s *Server) listConsumerGroups(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, desc, msg := listSort(q, mq.GroupSortKeys, "name")
	state := queryFilter(q, "state")
	if msg == "" && state != "" && !slices.Contains(mq.GroupStates, state) {
		msg = "Invalid state: " + state
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	f := mq.GroupFilter{Queue: n.query(q, "queue"), Group: n.query(q, "group"), Search: n.query(q, "search"),
		State: state, Sort: key, Desc: desc, Page: listPage(q, defaultGroupLimit)}
	var groups []mq.GroupSummary
	var err error
	if !n.nul {
		groups, err = s.read.ConsumerGroups(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, mapRows(groups, groupSummary))
}

func groupSummary(g mq.GroupSummary) groupSummaryJSON {
	state := g.State
	return groupSummaryJSON{Name: g.Group, Topics: []string{g.Queue}, QueueName: g.Queue, Members: g.Members,
		PartitionsWithLag: g.PartitionsWithLag, TotalLag: g.TotalLag, MaxTimeLag: g.MaxTimeLag, State: state,
		SubscriptionMode: g.SubscriptionMode, SubscriptionTimestamp: msOpt(g.SubscriptionTimestamp),
		SubscriptionCreatedAt: msOpt(g.SubscriptionCreatedAt)}
}

type laggingPairJSON struct {
	ConsumerGroup      string  `json:"consumer_group"`
	QueueName          string  `json:"queue_name"`
	PartitionName      string  `json:"partition_name"`
	PartitionID        string  `json:"partition_id"`
	WorkerID           *string `json:"worker_id"`
	OffsetLag          int64   `json:"offset_lag"`
	TimeLagSeconds     int64   `json:"time_lag_seconds"`
	LagHours           float64 `json:"lag_hours"`
	OldestUnconsumedAt msTime  `json:"oldest_unconsumed_at"`
	LastConsumedAt     msTime  `json:"last_consumed_at"`
}

// laggingConsumers serves GET /api/v1/consumer-groups/lagging (dashboard M8: queue, group,
// sort, order; minLagSeconds=0 lists every pair, for the lag heatmap).
func (s *Server) laggingConsumers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	minLag := int64(defaultMinLagSeconds)
	if v, ok := queryString(q, "minLagSeconds"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if errors.Is(err, strconv.ErrRange) && n > 0 {
			// Digits beyond 64 bits still spell a non-negative integer: above the maximum.
			n, err = maxMinLagSeconds, nil
		}
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "minLagSeconds must be a non-negative integer")
			return
		}
		minLag = min(n, maxMinLagSeconds)
	}
	key, desc, msg := listSort(q, mq.LagSortKeys, "timeLag")
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	var n nameArgs
	f := mq.LagFilter{MinLag: minLag, Queue: n.query(q, "queue"), Group: n.query(q, "group"), Sort: key, Desc: desc,
		Page: listPage(q, defaultGroupLimit)}
	var pairs []mq.PairLag
	var err error
	if !n.nul {
		pairs, err = s.read.LaggingPairs(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, mapRows(pairs, func(p mq.PairLag) laggingPairJSON {
		return laggingPairJSON{ConsumerGroup: p.Group, QueueName: p.Queue, PartitionName: p.Partition,
			PartitionID: p.PartitionID, WorkerID: p.LeaseID, OffsetLag: p.OffsetLag, TimeLagSeconds: p.TimeLag,
			LagHours: float64(p.TimeLag) / 3600, OldestUnconsumedAt: msOpt(p.OldestUnconsumed),
			LastConsumedAt: msOpt(p.LastConsumed)}
	}))
}

type groupPartitionJSON struct {
	Partition      string  `json:"partition"`
	WorkerID       *string `json:"workerId"`
	LastConsumedAt msTime  `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds int64   `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
}

type groupQueueJSON struct {
	Partitions []groupPartitionJSON `json:"partitions"`
}

func (s *Server) consumerGroupDetail(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ng, nq nameArgs
	group, queue, page := ng.path(r, "group"), nq.query(q, "queue"), listPage(q, defaultGroupLimit)
	if nq.nul {
		// A queue naming nothing keeps no row, and the group is still found when it has
		// cursors elsewhere.
		queue, page.Limit = "", 0
	}
	var pairs []mq.PairLag
	var found bool
	var err error
	if !ng.nul {
		pairs, found, err = s.read.ConsumerGroupPairs(r.Context(), group, queue, page)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Consumer group not found")
		return
	}
	out := map[string]*groupQueueJSON{}
	for _, p := range pairs {
		q := out[p.Queue]
		if q == nil {
			q = &groupQueueJSON{}
			out[p.Queue] = q
		}
		q.Partitions = append(q.Partitions, groupPartitionJSON{Partition: p.Partition, WorkerID: p.LeaseID,
			LastConsumedAt: msOpt(p.LastConsumed), TotalConsumed: p.TotalConsumed, OffsetLag: p.OffsetLag,
			TimeLagSeconds: p.TimeLag, LeaseActive: p.LeaseID != nil})
	}
	writeJSON(w, http.StatusOK, out)
}

type deleteGroupJSON struct {
	Success           bool    `json:"success"`
	ConsumerGroup     string  `json:"consumerGroup"`
	QueueName         *string `json:"queueName,omitempty"` // the one-queue form only
	DeletedPartitions int     `json:"deletedPartitions"`
	MetadataDeleted   bool    `json:"metadataDeleted"`
}

// deleteConsumerGroup serves both forms: every queue, or the one named in the path.
func (s *Server) deleteConsumerGroup(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	metadata := true // deleteMetadata defaults to true
	if _, set := queryString(q, "deleteMetadata"); set {
		metadata = queryBool(q, "deleteMetadata")
	}
	var names nameArgs
	group, queue := names.path(r, "group"), names.path(r, "queue")
	var n int
	var err error
	if !names.nul {
		n, err = s.read.DeleteConsumerGroup(r.Context(), group, queue, metadata)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := deleteGroupJSON{Success: true, ConsumerGroup: group, DeletedPartitions: n, MetadataDeleted: metadata}
	if queue != "" {
		out.QueueName = &queue
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) updateSubscription(w http.ResponseWriter, r *http.Request) {
	var body struct {
		SubscriptionTimestamp json.RawMessage `json:"subscriptionTimestamp"`
	}
	if !readObject(w, r, &body) {
		return
	}
	ts, ok := bodyTimestamp(w, body.SubscriptionTimestamp, "Missing subscriptionTimestamp in request body",
		"Invalid subscriptionTimestamp")
	if !ok {
		return
	}
	var names nameArgs
	group := names.path(r, "group")
	var n int
	var err error
	if !names.nul {
		n, err = s.read.SetSubscriptionTimestamp(r.Context(), group, ts)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group,
		"newTimestamp": msTime(ts), "rowsUpdated": n})
}

type seekQueueJSON struct {
	Success           bool   `json:"success"`
	ConsumerGroup     string `json:"consumerGroup"`
	QueueName         string `json:"queueName"`
	SeekToEnd         bool   `json:"seekToEnd"`
	TargetTimestamp   msTime `json:"targetTimestamp"`
	PartitionsUpdated int    `json:"partitionsUpdated"`
}

func (s *Server) seekQueue(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ToEnd     json.RawMessage `json:"toEnd"`
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if !readObject(w, r, &body) {
		return
	}
	toEnd := jsonKind(body.ToEnd) == 't'
	var ts *time.Time
	if !toEnd {
		t, ok := bodyTimestamp(w, body.Timestamp, "Must specify either 'toEnd': true or 'timestamp'", "Invalid timestamp")
		if !ok {
			return
		}
		ts = &t
	}
	var names nameArgs
	group, queue := names.path(r, "group"), names.path(r, "queue")
	var n int
	var found bool
	var err error
	if !names.nul {
		n, found, err = s.read.SeekQueue(r.Context(), group, queue, ts)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "Queue not found")
		return
	}
	writeJSON(w, http.StatusOK, seekQueueJSON{Success: true, ConsumerGroup: group, QueueName: queue, SeekToEnd: toEnd,
		TargetTimestamp: msOpt(ts), PartitionsUpdated: n})
}

func (s *Server) seekPartition(w http.ResponseWriter, r *http.Request) {
	var n nameArgs
	group, queue, partition := n.path(r, "group"), n.path(r, "queue"), n.path(r, "partition")
	var movedTo *string
	var found bool
	var err error
	if !n.nul {
		movedTo, found, err = s.read.SeekPartition(r.Context(), group, queue, partition)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !found {
		writeFailure(w, http.StatusNotFound, "Partition not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "queueName": queue,
		"partitionName": partition, "updated": true, "cursorMovedTo": movedTo})
}

// readObject reads a JSON body into v when it is an object; any other JSON value leaves v
// empty, so the route's own "missing field" answer applies.
func readObject(w http.ResponseWriter, r *http.Request, v any) bool {
	var body json.RawMessage
	if !readJSON(w, r, &body) {
		return false
	}
	if isObject(body) {
		_ = json.Unmarshal(body, v) // fields are raw JSON: they are checked one by one
	}
	return true
}

// bodyTimestamp reads a required timestamp field (docs/api/README.md §2.3): absent or null answers 400
// with missing, anything but a timestamp string 400 with invalid; ok is false once answered.
func bodyTimestamp(w http.ResponseWriter, raw json.RawMessage, missing, invalid string) (t time.Time, ok bool) {
	if isNull(raw) {
		writeError(w, http.StatusBadRequest, missing)
		return t, false
	}
	v, isString := asString(raw)
	t, err := parseTimestamp(v)
	if !isString || err != nil {
		writeError(w, http.StatusBadRequest, invalid)
		return t, false
	}
	return t, true
}
