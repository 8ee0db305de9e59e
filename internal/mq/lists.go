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
