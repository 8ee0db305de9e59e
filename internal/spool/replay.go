package spool

import (
	"errors"
	"fmt"
	"os"
)

// ErrStaleBatch is returned by Commit for a batch that does not start at the replay position:
// committed already, or older than another batch committed since. Nothing is changed.
var ErrStaleBatch = errors.New("spool: batch does not start at the replay position")

// Batch is a run of the oldest records not yet replayed, as Next returned them. Commit it
// once its records are in the database; otherwise the next Next returns it again.
type Batch struct {
	Records []Record
	start   cursor // the replay position it was read at
	end     cursor // the position after it
}

// laneKey is a record's (queue, partition).
type laneKey struct{ queue, partition string }

// Holds reports whether records of (queue, partition) wait for replay, so that a new push to
// it must queue behind them (its order is that partition's). Records left by an earlier run
// are not indexed by partition: while any of them waits, every partition is held.
func (s *Spool) Holds(queue, partition string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending > 0 && (s.unindexed > 0 || s.held[laneKey{queue, partition}] > 0)
}

// released forgets replayed records, oldest first (those of an earlier run come first);
// s.mu is held. A count left too high by a commit that failed part way only holds a
// partition longer, and ends when nothing is pending.
func (s *Spool) released(recs []Record) {
	for _, r := range recs {
		if s.unindexed > 0 {
			s.unindexed--
			continue
		}
		k := laneKey{r.Queue, r.Partition}
		if s.held[k] <= 1 {
			delete(s.held, k)
		} else {
			s.held[k]--
		}
	}
	if s.pending <= 0 {
		clear(s.held)
		s.unindexed = 0
	}
}

// Pending is the number of records appended and not yet committed as replayed.
func (s *Spool) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// Next returns up to max of the oldest records not yet committed, in append order (so the
// order of each (queue, partition) is the order of its Appends). It does not move the replay
// position: until Commit, every Next returns the same records. Only durable records are
// returned, never those of a write still waiting for its fsync. A record that no longer
// verifies on disk is a *CorruptError, returned every time, never skipped.
func (s *Spool) Next(max int) (Batch, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	start, segs, err := s.snapshot()
	if err != nil {
		return Batch{}, err
	}
	c := start
	var recs []Record
	for i := 0; len(recs) < max && i < len(segs); {
		seg := segs[i]
		if seg.seq != c.seq {
			i++
			continue
		}
		if c.off >= seg.end {
			if !seg.sealed || i+1 >= len(segs) {
				break // the newest file: nothing more is durable yet
			}
			i++
			c = cursor{seq: segs[i].seq, off: headerLen}
			continue
		}
		body, err := s.frame(seg, c.off)
		if err != nil {
			return Batch{}, err
		}
		got, n, err := decodeFrame(body, c.idx, max-len(recs))
		if err != nil {
			return Batch{}, &CorruptError{File: s.path(segName(seg.seq)), Offset: c.off,
				Reason: "checksum verifies but records do not decode"}
		}
		recs = append(recs, got...)
		c.idx += len(got)
		c.n += len(got)
		if c.idx >= n {
			c.off += frameHeaderLen + int64(len(body))
			c.idx = 0
		}
	}
	return Batch{Records: recs, start: start, end: c}, nil
}

// segView is a segment as replay reads it, copied under s.mu: the writer may extend or seal
// the segment meanwhile, which only means the view sees less than there is.
type segView struct {
	seq    uint64
	count  int
	end    int64
	sealed bool
}

// snapshot copies the replay position and the segments under s.mu; s.rmu is held, so no
// segment is removed before the caller is done.
func (s *Spool) snapshot() (cursor, []segView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return cursor{}, nil, ErrClosed
	}
	views := make([]segView, len(s.segs))
	for i, g := range s.segs {
		views[i] = segView{seq: g.seq, count: g.count, end: g.end, sealed: g.sealed}
	}
	return s.cur, views, nil
}

// frame reads and verifies the frame at off of seg, through the one-frame cache; s.rmu is held.
func (s *Spool) frame(seg segView, off int64) ([]byte, error) {
	if s.cache.body != nil && s.cache.seq == seg.seq && s.cache.off == off {
		return s.cache.body, nil
	}
	path := s.path(segName(seg.seq))
	if s.rd == nil || s.rdSeq != seg.seq {
		if s.rd != nil {
			s.rd.Close()
			s.rd = nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("spool: open %s: %w", path, err)
		}
		s.rd, s.rdSeq = f, seg.seq
	}
	body, _, reason, err := readFrameAt(s.rd, off, seg.end, s.cache.body[:0])
	if err != nil {
		return nil, fmt.Errorf("spool: read %s: %w", path, err)
	}
	if reason != "" {
		s.cache = frameCache{}
		return nil, &CorruptError{File: path, Offset: off, Reason: reason}
	}
	s.cache = frameCache{seq: seg.seq, off: off, body: body}
	return body, nil
}

// Commit marks b's records replayed, durably: the checkpoint of each file it reaches is
// written and fsynced, and a file fully replayed (and no longer written to) is deleted. After a
// crash, replay resumes after the last Commit that returned. A failed Commit leaves the records
// to be returned again by Next; if it got part way, the part already checkpointed is not.
// Checkpoints are written without holding what the writer needs, so replay does not slow
// Appends down.
func (s *Spool) Commit(b Batch) error {
	if len(b.Records) == 0 {
		return nil
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	cur, segs, err := s.snapshot()
	if err != nil {
		return err
	}
	if b.start != cur {
		return ErrStaleBatch
	}
	for _, seg := range segs {
		n := seg.count // a file the batch went past: sealed, replayed to its end
		if seg.seq == b.end.seq {
			n = b.end.n
		} else if !seg.sealed || seg.seq > b.end.seq {
			return fmt.Errorf("spool: batch ends in file %d, replay is in file %d", b.end.seq, seg.seq)
		}
		if err := s.writeCheckpoint(seg.seq, n); err != nil {
			return err
		}
		s.mu.Lock()
		s.pending -= n - cur.n
		if seg.seq == b.end.seq {
			s.cur = b.end
		} else {
			s.cur.n = n
		}
		gone := s.advance()
		if seg.seq == b.end.seq {
			s.released(b.Records)
		}
		s.mu.Unlock()
		s.removeSegs(gone)
		if seg.seq == b.end.seq {
			return nil
		}
		cur = cursor{n: 0}
	}
	return fmt.Errorf("spool: batch ends in file %d, which is gone", b.end.seq)
}

// writeCheckpoint records durably that n records of file seq are replayed; s.rmu is held.
// The checkpoint is rewritten in place: 20 bytes within one sector, and a torn one fails its
// checksum and counts as zero — its file is replayed again, which the keys make harmless.
func (s *Spool) writeCheckpoint(seq uint64, n int) error {
	path := s.path(ckptName(seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("spool: write checkpoint: %w", err)
	}
	_, err = f.WriteAt(encodeCheckpoint(n), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !s.ckpts[seq] {
		err = s.syncDir()
	}
	if err != nil {
		return fmt.Errorf("spool: write checkpoint %s: %w", path, err)
	}
	s.ckpts[seq] = true
	return nil
}

// advance drops the leading segments that are fully replayed and sealed, moving the replay
// position to the start of the next, and returns them for removeSegs; s.mu is held.
func (s *Spool) advance() []uint64 {
	var gone []uint64
	for len(s.segs) > 1 && s.segs[0].sealed && s.segs[0].seq == s.cur.seq && s.cur.n >= s.segs[0].count {
		gone = append(gone, s.segs[0].seq)
		s.segs = s.segs[1:]
		s.cur = cursor{seq: s.segs[0].seq, off: headerLen}
	}
	return gone
}

// removeSegs deletes replayed files; s.rmu is held, s.mu is not. A removal that fails is
// logged: the file's checkpoint already says it is replayed, so the next Open deletes it.
func (s *Spool) removeSegs(seqs []uint64) {
	for _, seq := range seqs {
		if err := s.removeSeg(seq); err != nil {
			s.Logger().Warn("spool: cannot remove a replayed file", "file", s.path(segName(seq)), "error", err)
		}
	}
}

// removeSeg deletes a replayed file, then its checkpoint, then syncs the directory: in that
// order a crash leaves either both, a file whose checkpoint says it is replayed, or an
// orphan checkpoint Open removes. s.rmu is held.
func (s *Spool) removeSeg(seq uint64) error {
	if s.rd != nil && s.rdSeq == seq {
		s.rd.Close()
		s.rd = nil
	}
	if s.cache.seq == seq {
		s.cache = frameCache{body: s.cache.body[:0]}
	}
	if err := os.Remove(s.path(segName(seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	delete(s.ckpts, seq)
	if err := os.Remove(s.path(ckptName(seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return s.syncDir()
}
