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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Batch{}, ErrClosed
	}
	c := s.cur
	var recs []Record
	for i := 0; len(recs) < max && i < len(s.segs); {
		seg := s.segs[i]
		if seg.seq != c.seq {
			i++ // before the replay position (only while a removal is pending)
			continue
		}
		if c.off >= seg.end {
			if !seg.sealed || i+1 >= len(s.segs) {
				break // the newest file: nothing more is durable yet
			}
			i++
			c = cursor{seq: s.segs[i].seq, off: headerLen}
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
	return Batch{Records: recs, start: s.cur, end: c}, nil
}

// frame reads and verifies the frame at off of seg, through the one-frame cache; s.mu is held.
func (s *Spool) frame(seg *segment, off int64) ([]byte, error) {
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
func (s *Spool) Commit(b Batch) error {
	if len(b.Records) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if b.start != s.cur {
		return ErrStaleBatch
	}
	for s.cur.seq != b.end.seq {
		// The batch went past the end of this file, which is sealed (a newer one exists).
		seg := s.segs[0]
		if !seg.sealed || seg.seq != s.cur.seq {
			return fmt.Errorf("spool: batch ends in file %d, replay is in file %d", b.end.seq, s.cur.seq)
		}
		if err := s.writeCheckpoint(seg, seg.count); err != nil {
			return err
		}
		s.pending -= seg.count - s.cur.n
		s.cur.n = seg.count
		s.advance()
	}
	if err := s.writeCheckpoint(s.segs[0], b.end.n); err != nil {
		return err
	}
	s.pending -= b.end.n - s.cur.n
	s.cur = b.end
	s.advance()
	return nil
}

// writeCheckpoint records durably that n records of seg are replayed; s.mu is held. The
// checkpoint is rewritten in place: 20 bytes within one sector, and a torn one fails its
// checksum and counts as zero — its file is replayed again, which the keys make harmless.
func (s *Spool) writeCheckpoint(seg *segment, n int) error {
	path := s.path(ckptName(seg.seq))
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
	if err == nil && !seg.ckptExists {
		err = s.syncDir()
	}
	if err != nil {
		return fmt.Errorf("spool: write checkpoint %s: %w", path, err)
	}
	seg.ckptExists = true
	return nil
}

// advance deletes the leading files that are fully replayed and sealed, moving the replay
// position to the start of the next; s.mu is held. A removal that fails is logged: the file's
// checkpoint already says it is replayed, so the next Open deletes it.
func (s *Spool) advance() {
	for len(s.segs) > 1 && s.segs[0].sealed && s.segs[0].seq == s.cur.seq && s.cur.n >= s.segs[0].count {
		if err := s.removeSeg(s.segs[0]); err != nil {
			s.Logger().Warn("spool: cannot remove a replayed file", "error", err)
		}
		s.segs = s.segs[1:]
		s.cur = cursor{seq: s.segs[0].seq, off: headerLen}
	}
}

// removeSeg deletes a replayed file, then its checkpoint, then syncs the directory: in that
// order a crash leaves either both, a file whose checkpoint says it is replayed, or an
// orphan checkpoint Open removes.
func (s *Spool) removeSeg(seg *segment) error {
	if s.rd != nil && s.rdSeq == seg.seq {
		s.rd.Close()
		s.rd = nil
	}
	if s.cache.seq == seg.seq {
		s.cache = frameCache{body: s.cache.body[:0]}
	}
	if err := os.Remove(s.path(segName(seg.seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(s.path(ckptName(seg.seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return s.syncDir()
}
