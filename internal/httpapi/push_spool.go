package httpapi

import "github.com/queen-go/queen/internal/mq"

// The answers of a spooled push (docs/api/operations.md §4.1, docs/api/data-api.md §2.3). Their
// field names differ from the database answer's on purpose: the reference spells them so
// (queue, partition, transactionId in camel case).

// bufferedJSON is one item of a push spooled to the file buffer.
type bufferedJSON struct {
	Index         int    `json:"index"`
	Status        string `json:"status"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	TransactionID string `json:"transactionId"`
}

// spoolFailedJSON is one item of a push whose spool write failed.
type spoolFailedJSON struct {
	Index     int    `json:"index"`
	Status    string `json:"status"`
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
	Error     string `json:"error"`
}

// partitionName is the partition an item goes to: Default when it names none.
func partitionName(it mq.PushItem) string {
	if it.Partition == "" {
		return "Default"
	}
	return it.Partition
}

// bufferedAnswer is the 201 body of a spooled push; transactionId is the key it keeps on replay.
func bufferedAnswer(items []mq.PushItem, res []mq.PushResult) []bufferedJSON {
	out := make([]bufferedJSON, len(res))
	for i, o := range res {
		out[i] = bufferedJSON{Index: i, Status: mq.StatusBuffered, Queue: items[i].Queue,
			Partition: partitionName(items[i]), TransactionID: o.TransactionID}
	}
	return out
}

// spoolFailedAnswer is the 503 body of a push that could be neither written nor spooled.
func spoolFailedAnswer(items []mq.PushItem) []spoolFailedJSON {
	out := make([]spoolFailedJSON, len(items))
	for i, it := range items {
		out[i] = spoolFailedJSON{Index: i, Status: mq.StatusFailed, Queue: it.Queue,
			Partition: partitionName(it), Error: "File buffer write failed"}
	}
	return out
}

// fileBuffer is this instance's spool figures; zero without a spool.
func (s *Server) fileBuffer() fileBufferCounts {
	if s.cfg.FileBuffer == nil {
		return fileBufferCounts{}
	}
	p, f := s.cfg.FileBuffer()
	return fileBufferCounts{Pending: p, Failed: f}
}
