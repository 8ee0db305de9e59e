package mq

import "time"

// Listing parameters shared by the dashboard's list routes (docs/api/admin-api.md "Listing
// parameters", dashboard M6-M8, M11).

// QueueListFilter selects and orders a page of the queue listings (GET
// /api/v1/resources/queues, GET /api/v1/status/queues). Empty names filter nothing; Search is
// a case-insensitive literal substring of the queue name; Sort is one of QueueSortKeys.
type QueueListFilter struct {
	Namespace, Task, Search string
	Sort                    string
	Desc                    bool
	Page                    Page
}

// QueueSortKeys are the sort keys of the queue listings, each with whether it sorts
// descending by default (counts, lags and times do; names do not).
var QueueSortKeys = map[string]bool{
	"name": false, "createdAt": true, "namespace": false, "task": false, "partitions": true,
	"total": true, "pending": true, "processing": true, "deadLetter": true, "lag": true,
}

// QueueList is one page of a queue listing: the rows, how many queues match in all, and when
// the counters were computed (nil before the stats job first ran).
type QueueList struct {
	Queues  []QueueSummary
	Total   int64
	StatsAt *time.Time
}

// PartitionPage selects and orders a page of one queue's partitions (GET
// /api/v1/resources/queues/:queue, GET /api/v1/status/queues/:queue; dashboard M7, M9):
// Search is a case-insensitive literal substring of the partition name; Sort is one of
// QueuePartitionSortKeys.
type PartitionPage struct {
	Search string
	Sort   string
	Desc   bool
	Page   Page
}

// QueuePartitionSortKeys are the sort keys of a queue's partitions, each with whether it
// sorts descending by default.
var QueuePartitionSortKeys = map[string]bool{
	"name": false, "createdAt": true, "total": true, "pending": true, "lag": true, "lastActivity": true,
}

// GroupFilter selects and orders a page of GET /api/v1/consumer-groups (dashboard M8): Queue
// and Group exact, Search a case-insensitive literal substring of the group name, State one of
// GroupStates; Sort is one of GroupSortKeys.
type GroupFilter struct {
	Queue, Group, Search, State string
	Sort                        string
	Desc                        bool
	Page                        Page
}

// GroupStates are the states of a (group, queue) row (docs/api/admin-api.md §7).
var GroupStates = []string{"Stable", "Lagging", "Dead"}

// GroupSortKeys are the sort keys of the consumer-group listing, each with whether it sorts
// descending by default.
var GroupSortKeys = map[string]bool{
	"name": false, "queue": false, "members": true, "totalLag": true, "maxTimeLag": true,
}

// LagFilter selects and orders a page of GET /api/v1/consumer-groups/lagging (dashboard M8):
// pairs at least MinLag seconds behind, on Queue and of Group when given; Sort is one of
// LagSortKeys.
type LagFilter struct {
	MinLag       int64
	Queue, Group string
	Sort         string
	Desc         bool
	Page         Page
}

// LagSortKeys are the sort keys of the lagging listing, each with whether it sorts descending
// by default.
var LagSortKeys = map[string]bool{"timeLag": true, "offsetLag": true, "partition": false, "group": false}

// LabelFilter selects and orders a page of the namespace (ByTask false) or task listing:
// Search is a case-insensitive literal substring of the label; Sort is one of LabelSortKeys.
type LabelFilter struct {
	ByTask bool
	Search string
	Sort   string
	Desc   bool
	Page   Page
}

// LabelSortKeys are the sort keys of the namespace and task listings, each with whether it
// sorts descending by default.
var LabelSortKeys = map[string]bool{"name": false, "queues": true, "pending": true}

// LabelList is one page of a namespace or task listing with how many labels match.
type LabelList struct {
	Labels []LabelSummary
	Total  int64
}
