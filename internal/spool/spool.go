package spool

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/internal/lifecycle"
)

var (
	// ErrLocked is returned by Open when another Spool, in this process or another, holds the
	// directory: two writers would interleave their records and replay each other's.
	ErrLocked = errors.New("spool: directory is locked by another instance")
	// ErrWrite wraps the cause when an Append could not be made durable (disk full, directory
	// not writable, fsync failed). Nothing of that Append is kept; the spool stays usable. The
	// push answers 503 with the reference's "File buffer write failed" per item.
	ErrWrite = errors.New("spool: write failed")
	// ErrClosed is returned for work a Spool refuses because it is not running: Append before
	// Start or after Stop, anything after Close. It wraps lifecycle.ErrStopped.
	ErrClosed = fmt.Errorf("spool: %w", lifecycle.ErrStopped)
)

// Default settings, those of docs/api/operations.md §1.3.
const (
	DefaultEventsPerFile = 10000
	DefaultFlushInterval = 100 * time.Millisecond
	DefaultMaxBatch      = 100
	DefaultMaxBackoff    = 5 * time.Second
)

// maxGroupBytes bounds one group commit: past it, further waiting Appends go in the next
// write, so one write (and what a crash can tear) stays small. A larger single Append still
// goes alone.
const maxGroupBytes = 4 << 20

// Record is one spooled push item: everything replay needs to write it as the push it
// replaces, with the ids minted when it was spooled.
type Record struct {
	Queue     string
	Partition string // "" means Default, as in mq.PushItem
	MessageID string // minted at spool time; replay writes the message under it
	// Key is the dedup key (transactionId): the producer's, or the minted one. Replay of a
	// record whose key is already taken is dropped as a duplicate.
	Key         string
	Payload     []byte  // JSON text, stored as is: encryption is applied on replay
	ProducerSub *string // JWT sub of the producer, nil without one
	TraceID     string  // "" for none
	// SpooledAt is when the record was spooled; Append sets it from the Spool's clock when
	// zero. Stored with nanosecond precision, read back in UTC.
	SpooledAt time.Time
}

// Options configure a Spool. The zero value takes the defaults.
type Options struct {
	// EventsPerFile is the number of records per file before a new one starts
	// (FILE_BUFFER_EVENTS_PER_FILE). An Append is never split across files, so a file holds
	// more only when one Append alone is larger.
	EventsPerFile int
	Logger        *slog.Logger     // nil: slog.Default(); lines carry component=spool
	Clock         func() time.Time // SpooledAt of records that carry none; nil: time.Now
}

// Stats are counters of the append path since Open.
type Stats struct {
	Appends int64 // Append calls made durable
	Records int64 // records made durable
	Writes  int64 // group commits: one write and one file fsync each, carrying one or more Appends
	Fsyncs  int64 // fsyncs of spool files and of the directory on the append path
	Pending int   // records not yet replayed
}

// Spool is the durable on-disk log of pushes. It is a lifecycle part: Start runs the writer
// goroutine that group-commits Appends; Stop lets it write what was accepted and ends it;
// Close stops it and releases the directory. Next and Commit (replay) work whether or not it
// runs, until Close.
type Spool struct {
	lifecycle.StartStop
	lifecycle.Base

	dir           string
	eventsPerFile int
	lock          *os.File

	// The intake: Appends waiting for the writer.
	qmu   sync.Mutex
	queue []*appendJob
	open  bool          // the writer runs: Appends are accepted
	kick  chan struct{} // (at most one buffered) wake-up of the writer

	// Owned by the writer goroutine (and by Open and Close, when it does not run).
	active  *activeFile // the file Appends go to; nil: the next write starts a new one
	nextSeq uint64      // number of the next new file; never reused, so no stale checkpoint applies

	// Shared between the writer and replay; mu guards them. It is held only for bookkeeping,
	// never across a disk write, so replay's fsyncs do not stall the writer.
	mu      sync.Mutex
	segs    []*segment // oldest first
	cur     cursor     // the replay position: everything before it is committed
	pending int
	closed  bool
	// held counts the pending records of each (queue, partition) appended by this run, so
	// that pushes to other partitions need not queue behind them (Holds); unindexed counts the
	// pending records found at Open, which are not read for their partitions and hold every
	// partition until they are replayed. Both are reset when nothing is pending.
	held      map[laneKey]int
	unindexed int

	// The replay side: rmu serializes Next, Commit and the removal of files (also the
	// writer's, at rollover), and guards these. Taken before mu.
	rmu   sync.Mutex
	rd    *os.File // read handle of rdSeq, kept across Next calls
	rdSeq uint64
	cache frameCache
	ckpts map[uint64]bool // files whose checkpoint exists (its creation needs a directory fsync)

	appends, records, writes, fsyncs atomic.Int64
	fsyncHook                        func() // tests: called at every append-path fsync
}

// segment is one spool file as replay sees it: only its durable part.
type segment struct {
	seq    uint64
	count  int   // durable records
	end    int64 // durable bytes
	sealed bool  // a newer file exists, so this one takes no more writes
}

// cursor is a replay position: file seq, the frame at off, idx records into that frame, n
// records into the file.
type cursor struct {
	seq uint64
	off int64
	idx int
	n   int
}

// frameCache keeps the last frame Next read, so a large frame (a big group commit) is read
// from disk once, not once per batch cut from it.
type frameCache struct {
	seq  uint64
	off  int64
	body []byte
}

type activeFile struct {
	f         *os.File
	seg       *segment
	size      int64 // durable bytes
	count     int   // durable records
	dirSynced bool  // the directory entry is durable
	dirty     bool  // bytes past size may remain from a failed write: truncate before writing
}

// Job states: the writer claims a job, or its Append abandons it, never both.
const (
	jobPending int32 = iota
	jobTaken
	jobAbandoned
)

type appendJob struct {
	n     int
	lanes []laneKey // the (queue, partition) of each record
	enc   []byte    // the records, each length-prefixed, ready to join a frame body
	state atomic.Int32
	done  chan error
}

func segName(seq uint64) string  { return fmt.Sprintf("%016x.spool", seq) }
func ckptName(seq uint64) string { return fmt.Sprintf("%016x.ckpt", seq) }

// Open takes the directory (creating it), verifies every spool file in it, discards a torn
// last record of the newest file, and returns a Spool ready to Start. A record that fails
// verification anywhere else stops Open with a *CorruptError naming file and offset; another
// holder of the directory, ErrLocked.
func Open(dir string, opts Options) (*Spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", dir, err)
	}
	lock, err := lockDir(filepath.Join(dir, "spool.lock"))
	if err != nil {
		return nil, err
	}
	s := &Spool{
		Base:          lifecycle.NewBase("spool", opts.Logger, opts.Clock),
		dir:           dir,
		eventsPerFile: cmp.Or(max(opts.EventsPerFile, 0), DefaultEventsPerFile),
		lock:          lock,
		kick:          make(chan struct{}, 1),
		nextSeq:       1,
	}
	if err := s.load(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

func (s *Spool) path(name string) string { return filepath.Join(s.dir, name) }

// load scans the directory: the files, the torn tail, the checkpoints, the replay position.
func (s *Spool) load() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("spool: read %s: %w", s.dir, err)
	}
	var segSeqs []uint64
	ckpts := map[uint64]bool{}
	for _, e := range ents {
		name := e.Name()
		stem, ext, ok := strings.Cut(name, ".")
		seq, perr := strconv.ParseUint(stem, 16, 64)
		if !ok || perr != nil || len(stem) != 16 {
			continue
		}
		switch ext {
		case "spool":
			segSeqs = append(segSeqs, seq)
		case "ckpt":
			ckpts[seq] = true
		default:
			continue
		}
		s.nextSeq = max(s.nextSeq, seq+1)
	}
	slices.Sort(segSeqs)
	s.ckpts = ckpts
	dirChanged := false
	var frames [][]frameInfo
	for i, seq := range segSeqs {
		path := s.path(segName(seq))
		newest := i == len(segSeqs)-1
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("spool: open %s: %w", path, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("spool: stat %s: %w", path, err)
		}
		res, err := scanFile(path, f, st.Size(), newest)
		if err != nil {
			f.Close()
			return err
		}
		if res.torn {
			if res.end == 0 {
				// Not even the header is whole: the file's first write never completed.
				f.Close()
				if err := os.Remove(path); err != nil {
					return fmt.Errorf("spool: remove empty %s: %w", path, err)
				}
				s.Logger().Warn("spool: removed a file whose first write was torn", "file", path)
				dirChanged = true
				continue
			}
			if err := f.Truncate(res.end); err != nil {
				f.Close()
				return fmt.Errorf("spool: truncate torn record of %s: %w", path, err)
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return fmt.Errorf("spool: sync %s: %w", path, err)
			}
			s.Logger().Warn("spool: discarded a torn last record (never acknowledged)",
				"file", path, "offset", res.end, "bytes", st.Size()-res.end)
		}
		seg := &segment{seq: seq, count: res.count, end: res.end}
		s.segs = append(s.segs, seg)
		frames = append(frames, res.frames)
		if newest && seg.count < s.eventsPerFile {
			s.active = &activeFile{f: f, seg: seg, size: res.end, count: res.count, dirSynced: true}
		} else {
			f.Close()
		}
	}
	for i, seg := range s.segs {
		seg.sealed = i < len(s.segs)-1
		s.pending += seg.count
	}
	// Orphan checkpoints (their file was deleted, a crash came before they were): gone, so
	// none can ever apply to another file.
	for seq := range ckpts {
		if !slices.ContainsFunc(s.segs, func(g *segment) bool { return g.seq == seq }) {
			if err := os.Remove(s.path(ckptName(seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("spool: remove orphan checkpoint: %w", err)
			}
			delete(ckpts, seq)
			dirChanged = true
		}
	}
	if dirChanged {
		if err := s.syncDir(); err != nil {
			return fmt.Errorf("spool: sync %s: %w", s.dir, err)
		}
	}
	// The replay position: the first file's checkpoint. Leading files fully replayed (a crash
	// came before their removal) go first.
	for len(s.segs) > 0 {
		seg := s.segs[0]
		n := 0
		if s.ckpts[seg.seq] {
			if n, err = s.readCheckpoint(seg); err != nil {
				return err
			}
		}
		s.pending -= n
		if n == seg.count && seg.sealed {
			if err := s.removeSeg(seg.seq); err != nil {
				return fmt.Errorf("spool: remove replayed file: %w", err)
			}
			s.segs, frames = s.segs[1:], frames[1:]
			continue
		}
		s.cur = cursor{seq: seg.seq, off: seg.end, n: n}
		left := n
		for k, fr := range frames[0] {
			if left < fr.n {
				s.cur.off, s.cur.idx = fr.off, left
				break
			}
			left -= fr.n
			s.cur.off = seg.end
			if k+1 < len(frames[0]) {
				s.cur.off = frames[0][k+1].off
			}
		}
		break
	}
	s.unindexed = s.pending
	return nil
}

// readCheckpoint returns how many records of seg are replayed. A checkpoint that does not
// verify counts as none: its records are replayed again, which their keys make harmless.
func (s *Spool) readCheckpoint(seg *segment) (int, error) {
	path := s.path(ckptName(seg.seq))
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("spool: read checkpoint: %w", err)
	}
	n, ok := decodeCheckpoint(b)
	if !ok {
		s.Logger().Warn("spool: checkpoint does not verify; its file is replayed from the start", "file", path)
		return 0, nil
	}
	if n > seg.count {
		return 0, &CorruptError{File: path, Offset: 0,
			Reason: fmt.Sprintf("checkpoint counts %d replayed records, the file holds %d", n, seg.count)}
	}
	return n, nil
}

// Start runs the writer until Stop.
func (s *Spool) Start(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return s.StartWith(ctx, func(context.Context) error {
		s.qmu.Lock()
		s.open = true
		s.qmu.Unlock()
		s.Go(s.writer)
		return nil
	})
}

// Close stops the writer (Appends already accepted are written first), closes the files and
// releases the directory lock. It is safe to call again.
func (s *Spool) Close() error {
	s.Stop()
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.closeFiles()
	return nil
}

func (s *Spool) closeFiles() {
	if s.active != nil {
		s.active.f.Close()
		s.active = nil
	}
	if s.rd != nil {
		s.rd.Close()
		s.rd = nil
	}
	if s.lock != nil {
		s.lock.Close() // releases the flock
		s.lock = nil
	}
}

// Append writes recs as one unit and returns once they are durable: written and fsynced,
// with the directory fsynced too when the write started a new file. Concurrent Appends share
// one write and one fsync (group commit). On failure it returns an error wrapping ErrWrite
// and nothing of recs is kept. When ctx ends before the writer takes recs, Append returns
// ctx's error and nothing is written; once taken, it waits for the write, which is bounded by
// the disk, so its answer is always true.
func (s *Spool) Append(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Encoded here, on the caller's goroutine, so concurrent Appends encode in parallel and the
	// writer only joins bytes.
	var now time.Time
	var enc, scratch []byte
	lanes := make([]laneKey, len(recs))
	for i := range recs {
		lanes[i] = laneKey{recs[i].Queue, recs[i].Partition}
		r := &recs[i]
		if r.SpooledAt.IsZero() {
			if now.IsZero() {
				now = s.Now()
			}
			c := *r
			c.SpooledAt = now
			r = &c
		}
		scratch = encodeRecord(scratch[:0], r)
		enc = binary.AppendUvarint(enc, uint64(len(scratch)))
		enc = append(enc, scratch...)
	}
	job := &appendJob{n: len(recs), lanes: lanes, enc: enc, done: make(chan error, 1)}
	s.qmu.Lock()
	if !s.open {
		s.qmu.Unlock()
		return ErrClosed
	}
	s.queue = append(s.queue, job)
	s.qmu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
	select {
	case err := <-job.done:
		return err
	case <-ctx.Done():
		if job.state.CompareAndSwap(jobPending, jobAbandoned) {
			return ctx.Err()
		}
		return <-job.done
	}
}

// writer group-commits the intake whenever kicked, until ctx ends; then it closes the intake
// and writes what is left, so every accepted Append gets its true answer.
func (s *Spool) writer(ctx context.Context) {
	for {
		select {
		case <-s.kick:
			s.writeQueued()
		case <-ctx.Done():
			s.qmu.Lock()
			s.open = false
			s.qmu.Unlock()
			s.writeQueued()
			return
		}
	}
}

// writeQueued writes the intake, group after group, until it is empty. An idle spool's Append
// is written at once; Appends that arrive while a write and its fsync run make the next group.
func (s *Spool) writeQueued() {
	for {
		jobs := s.take()
		if len(jobs) == 0 {
			return
		}
		err := s.writeGroup(jobs)
		if err != nil && len(jobs) > 1 {
			// All-or-nothing is per Append, not per group: each alone may still fit (a smaller
			// one on a nearly full disk), so the group's failure is not pinned on all of them.
			for _, j := range jobs {
				j.done <- s.writeGroup([]*appendJob{j})
			}
			continue
		}
		for _, j := range jobs {
			j.done <- err
		}
	}
}

// take claims the next group from the intake: in arrival order, while it fits in the current
// file (or the next one, when the first job does not) and in maxGroupBytes.
func (s *Spool) take() []*appendJob {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	room := s.eventsPerFile
	if a := s.active; a != nil && a.count < s.eventsPerFile {
		room -= a.count
	}
	var jobs []*appendJob
	records, bytes, i := 0, 0, 0
	for ; i < len(s.queue); i++ {
		j := s.queue[i]
		if j.state.Load() == jobAbandoned {
			continue
		}
		if len(jobs) == 0 && j.n > room {
			room = s.eventsPerFile // it starts a new file
		}
		if len(jobs) > 0 && (records+j.n > room || bytes+len(j.enc) > maxGroupBytes) {
			break
		}
		if !j.state.CompareAndSwap(jobPending, jobTaken) {
			continue // abandoned just now
		}
		jobs = append(jobs, j)
		records += j.n
		bytes += len(j.enc)
	}
	s.queue = slices.Delete(s.queue, 0, i)
	if len(s.queue) == 0 {
		s.queue = nil // let a burst's backing array go
	}
	return jobs
}

// writeGroup makes jobs durable as one frame: one write, one fsync. On failure the file is
// cut back to its durable size, so nothing of the frame survives.
func (s *Spool) writeGroup(jobs []*appendJob) error {
	n, size := 0, 0
	for _, j := range jobs {
		n += j.n
		size += len(j.enc)
	}
	if a := s.active; a == nil || a.count >= s.eventsPerFile || (a.count > 0 && a.count+n > s.eventsPerFile) {
		if err := s.roll(); err != nil {
			return fmt.Errorf("%w: %w", ErrWrite, err)
		}
	}
	a := s.active
	if a.dirty {
		if err := s.cutBack(a); err != nil {
			return fmt.Errorf("%w: %w", ErrWrite, err)
		}
	}
	buf := make([]byte, 0, headerLen+frameHeaderLen+binary.MaxVarintLen64+size)
	if a.size == 0 {
		buf = append(buf, fileHeader()...)
	}
	start := len(buf)
	buf = append(buf, make([]byte, frameHeaderLen)...)
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, j := range jobs {
		buf = append(buf, j.enc...)
	}
	body := buf[start+frameHeaderLen:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(buf[start+4:], frameSum(buf[start:start+4], body))

	_, err := a.f.WriteAt(buf, a.size)
	if err == nil {
		err = s.fsync(a.f)
	}
	if err == nil && !a.dirSynced {
		if err = s.syncDirCounted(); err == nil {
			a.dirSynced = true
		}
	}
	if err != nil {
		if cerr := s.cutBack(a); cerr != nil {
			s.Logger().Error("spool: cannot cut a failed write back; retried before the next write",
				"file", s.path(segName(a.seg.seq)), "error", cerr)
		}
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	a.size += int64(len(buf))
	a.count += n
	s.mu.Lock()
	a.seg.end, a.seg.count = a.size, a.count
	s.pending += n
	if s.held == nil {
		s.held = make(map[laneKey]int)
	}
	for _, j := range jobs {
		for _, k := range j.lanes {
			s.held[k]++
		}
	}
	s.mu.Unlock()
	s.appends.Add(int64(len(jobs)))
	s.records.Add(int64(n))
	s.writes.Add(1)
	return nil
}

// cutBack truncates the active file to its durable size and makes that durable, so a failed
// write's bytes can never be replayed; while it fails, the file stays dirty and no write
// follows.
func (s *Spool) cutBack(a *activeFile) error {
	a.dirty = true
	if err := a.f.Truncate(a.size); err != nil {
		return err
	}
	if err := a.f.Sync(); err != nil {
		return err
	}
	a.dirty = false
	return nil
}

// roll starts a new file for the next write. The old one must be clean: once sealed, bad
// bytes at its end would read as corruption.
func (s *Spool) roll() error {
	old := s.active
	if old != nil && old.dirty {
		if err := s.cutBack(old); err != nil {
			return err
		}
	}
	// Numbers are never reused (Open starts past every file and checkpoint it saw), so no
	// checkpoint can apply to the new file; O_EXCL makes sure no file is overwritten.
	seq := s.nextSeq
	f, err := os.OpenFile(s.path(segName(seq)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	s.nextSeq++
	seg := &segment{seq: seq}
	s.active = &activeFile{f: f, seg: seg}
	s.rmu.Lock() // the old file may be replayed already: its removal is replay's business
	defer s.rmu.Unlock()
	s.mu.Lock()
	if n := len(s.segs); n > 0 {
		s.segs[n-1].sealed = true // the active file, or the full newest one Open left closed
	}
	s.segs = append(s.segs, seg)
	if len(s.segs) == 1 {
		s.cur = cursor{seq: seq, off: headerLen}
	}
	gone := s.advance()
	s.mu.Unlock()
	s.removeSegs(gone)
	if old != nil {
		old.f.Close()
	}
	return nil
}

func (s *Spool) fsync(f *os.File) error {
	s.fsyncs.Add(1)
	if s.fsyncHook != nil {
		s.fsyncHook()
	}
	return f.Sync()
}

func (s *Spool) syncDirCounted() error {
	s.fsyncs.Add(1)
	if s.fsyncHook != nil {
		s.fsyncHook()
	}
	return s.syncDir()
}

// syncDir makes the directory's entries durable: a new file's name, a removal.
func (s *Spool) syncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Stats returns the append path's counters and the pending count.
func (s *Spool) Stats() Stats {
	return Stats{
		Appends: s.appends.Load(),
		Records: s.records.Load(),
		Writes:  s.writes.Load(),
		Fsyncs:  s.fsyncs.Load(),
		Pending: s.Pending(),
	}
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.dir }
