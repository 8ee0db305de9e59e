package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/testkit"
)

// rec is record i of a partition, its payload and ids derived from i so a read-back can be
// checked field by field.
func rec(part string, i int) Record {
	return Record{
		Queue:     "q",
		Partition: part,
		MessageID: fmt.Sprintf("%s-%d", part, i),
		Key:       fmt.Sprintf("k-%s-%d", part, i),
		Payload:   fmt.Appendf(nil, `{"part":%q,"i":%d}`, part, i),
	}
}

func openSpool(t testing.TB, dir string, opts Options) *Spool {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendOK(t testing.TB, s *Spool, recs ...Record) {
	t.Helper()
	if err := s.Append(context.Background(), recs); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// ids reads what replay would see, without committing it.
func ids(t testing.TB, s *Spool) []string {
	t.Helper()
	b, err := s.Next(1 << 30)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	var out []string
	for _, r := range b.Records {
		out = append(out, r.MessageID)
	}
	return out
}

func names(ids ...int) []string {
	var out []string
	for _, i := range ids {
		out = append(out, fmt.Sprintf("p-%d", i))
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func spoolFiles(t testing.TB, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*."+ext))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

func TestRecordRoundTripsEveryField(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	sub := "producer-1"
	at := time.Date(2026, 3, 4, 5, 6, 7, 891, time.UTC)
	in := []Record{
		{Queue: "orders", Partition: "", MessageID: "id-1", Key: "tx-1", Payload: []byte(`{"a":[1,2]}`),
			ProducerSub: &sub, TraceID: "trace-9", SpooledAt: at},
		{Queue: "orders", Partition: "p", MessageID: "id-2", Key: "id-2", Payload: []byte(`null`)},
		{Queue: "ö", Partition: "p", MessageID: "id-3", Key: "k", Payload: []byte{}, ProducerSub: new(string)},
	}
	before := time.Now()
	appendOK(t, s, in...)
	b, err := s.Next(10)
	if err != nil || len(b.Records) != 3 {
		t.Fatalf("Next = %d records, %v", len(b.Records), err)
	}
	got := b.Records
	if !got[0].SpooledAt.Equal(at) || got[1].SpooledAt.Before(before.Add(-time.Second)) {
		t.Errorf("SpooledAt = %v, %v", got[0].SpooledAt, got[1].SpooledAt)
	}
	for i := range in {
		g, w := got[i], in[i]
		if g.Queue != w.Queue || g.Partition != w.Partition || g.MessageID != w.MessageID || g.Key != w.Key ||
			!bytes.Equal(g.Payload, w.Payload) || g.TraceID != w.TraceID ||
			(g.ProducerSub == nil) != (w.ProducerSub == nil) || (g.ProducerSub != nil && *g.ProducerSub != *w.ProducerSub) {
			t.Errorf("record %d = %+v, want %+v", i, g, w)
		}
	}
	if !in[1].SpooledAt.IsZero() {
		t.Error("Append changed the caller's record")
	}
}

// Order holds across files and restarts; checkpoints survive restarts; replayed files go.
func TestOrderAcrossFilesAndRestarts(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{EventsPerFile: 10})
	n := 0
	for _, size := range []int{1, 3, 4, 2, 4, 1, 3, 3, 4, 4, 2, 4} { // 35 records
		var recs []Record
		for range size {
			recs = append(recs, rec("p", n))
			n++
		}
		appendOK(t, s, recs...)
	}
	if got := len(spoolFiles(t, dir, "spool")); got != 4 {
		t.Fatalf("%d files for 35 records at 10 per file, want 4", got)
	}
	if s.Pending() != 35 {
		t.Fatalf("Pending = %d, want 35", s.Pending())
	}
	// Next without Commit returns the same batch; a batch may span files.
	b1, _ := s.Next(12)
	b2, _ := s.Next(12)
	if !slices.Equal(recIDs(b1), names(seq(0, 12)...)) || !slices.Equal(recIDs(b1), recIDs(b2)) {
		t.Fatalf("Next = %v then %v", recIDs(b1), recIDs(b2))
	}
	if err := s.Commit(b1); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b2); !errors.Is(err, ErrStaleBatch) {
		t.Fatalf("second Commit of the same batch = %v, want ErrStaleBatch", err)
	}
	if got := len(spoolFiles(t, dir, "spool")); got != 3 {
		t.Errorf("%d files after replaying the first, want 3", got)
	}
	b3, _ := s.Next(5)
	if err := s.Commit(b3); err != nil {
		t.Fatal(err)
	}
	if s.Pending() != 18 {
		t.Fatalf("Pending = %d, want 18", s.Pending())
	}
	s.Close()

	// Restart: the checkpoint holds, appends continue after the old records.
	s = openSpool(t, dir, Options{EventsPerFile: 10})
	if s.Pending() != 18 {
		t.Fatalf("Pending after restart = %d, want 18", s.Pending())
	}
	for ; n < 47; n++ {
		appendOK(t, s, rec("p", n))
	}
	b, _ := s.Next(7)
	if !slices.Equal(recIDs(b), names(seq(17, 24)...)) {
		t.Fatalf("Next after restart = %v", recIDs(b))
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openSpool(t, dir, Options{EventsPerFile: 10})
	if got, want := ids(t, s), names(seq(24, 47)...); !slices.Equal(got, want) {
		t.Fatalf("after second restart = %v, want %v", got, want)
	}
	drain(t, s, 4)
	if s.Pending() != 0 {
		t.Fatalf("Pending = %d after draining", s.Pending())
	}
	// Only the newest file stays (it takes the next Appends); its checkpoint says all replayed.
	if files := spoolFiles(t, dir, "spool"); len(files) != 1 {
		t.Errorf("files after draining: %v", files)
	}
	s.Close()
	s = openSpool(t, dir, Options{EventsPerFile: 10})
	if s.Pending() != 0 {
		t.Fatalf("Pending after draining and restart = %d", s.Pending())
	}
	appendOK(t, s, rec("p", 47))
	if got := ids(t, s); !slices.Equal(got, names(47)) {
		t.Fatalf("after draining, restart and append: %v", got)
	}
}

func recIDs(b Batch) []string {
	var out []string
	for _, r := range b.Records {
		out = append(out, r.MessageID)
	}
	return out
}

func drain(t testing.TB, s *Spool, max int) []string {
	t.Helper()
	var out []string
	for {
		b, err := s.Next(max)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(b.Records) == 0 {
			return out
		}
		out = append(out, recIDs(b)...)
		if err := s.Commit(b); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
}

// Replay keeps up with appends that continue meanwhile, file rollovers included.
func TestReplayConcurrentWithAppends(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{EventsPerFile: 7})
	const parts, each = 4, 60
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for i := range each {
				if err := s.Append(context.Background(), []Record{rec(fmt.Sprint("p", p), i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var got []Record
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished || s.Pending() > 0; {
		select {
		case <-done:
			finished = true
		default:
		}
		b, err := s.Next(5)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Records...)
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	next := map[string]int{}
	for _, r := range got {
		if want := fmt.Sprintf("%s-%d", r.Partition, next[r.Partition]); r.MessageID != want {
			t.Fatalf("replayed %s, want %s", r.MessageID, want)
		}
		next[r.Partition]++
	}
	if len(got) != parts*each {
		t.Fatalf("replayed %d records, want %d", len(got), parts*each)
	}
	if files := spoolFiles(t, dir, "spool"); len(files) != 1 {
		t.Errorf("files after replaying everything: %v", files)
	}
}

// N concurrent Appends share fsyncs: while the first write's fsync is held, the other N-1
// queue up, and the writer carries them all in its next write.
func TestGroupCommit(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	release, held := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer s.Close()
	defer unblock() // before Close, also when the test fails
	s.fsyncHook = func() { once.Do(func() { close(held); <-release }) }
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	appendOne := func(i int) {
		wg.Go(func() {
			if err := s.Append(context.Background(), []Record{rec("p", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	appendOne(0)
	<-held // the writer is in the first write's fsync
	for i := 1; i < n; i++ {
		appendOne(i)
	}
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		s.qmu.Lock()
		defer s.qmu.Unlock()
		if len(s.queue) != n-1 {
			return fmt.Errorf("%d Appends waiting", len(s.queue))
		}
		return nil
	})
	unblock()
	wg.Wait()
	st := s.Stats()
	// One write alone, one for the other 49; the directory once, for the new file.
	if st.Appends != n || st.Records != n || st.Writes != 2 || st.Fsyncs != 3 {
		t.Fatalf("stats %+v, want 50 appends in 2 writes and 3 fsyncs", st)
	}
	if got := ids(t, s); len(got) != n {
		t.Fatalf("%d records spooled", len(got))
	}
}

// An Append whose context ends before the writer takes it is not written.
func TestAppendAbandonedBeforeWriteIsNotKept(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release, held := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // before Close, also when the test fails
	s.fsyncHook = func() { once.Do(func() { close(held); <-release }) }
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- s.Append(context.Background(), []Record{rec("p", 0)}) }()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- s.Append(ctx, []Record{rec("p", 1)}) }()
	testkit.Eventually(t, time.Minute, time.Millisecond, func() error {
		s.qmu.Lock()
		defer s.qmu.Unlock()
		if len(s.queue) != 1 {
			return errors.New("second Append not queued")
		}
		return nil
	})
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned Append = %v", err)
	}
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, rec("p", 2))
	if got := ids(t, s); !slices.Equal(got, names(0, 2)) {
		t.Fatalf("spooled %v, want p-0, p-2", got)
	}
}

func TestAppendRefusedWhenNotRunning(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background(), []Record{rec("p", 0)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append before Start = %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, rec("p", 0))
	s.Close()
	if err := s.Append(context.Background(), []Record{rec("p", 1)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if _, err := s.Next(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeRecords spools recs one Append each (one frame each) and closes the spool.
func writeRecords(t *testing.T, dir string, opts Options, from, to int) {
	t.Helper()
	s := openSpool(t, dir, opts)
	for i := from; i < to; i++ {
		appendOK(t, s, rec("p", i))
	}
	s.Close()
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// A torn last record — cut short, or followed by junk — is discarded at Open; everything
// before it stays, and new Appends follow the survivors.
func TestTornLastRecordIsDiscarded(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"cut short": func(t *testing.T, path string) {
			if err := os.Truncate(path, fileSize(t, path)-3); err != nil {
				t.Fatal(err)
			}
		},
		"header cut short": func(t *testing.T, path string) {
			offs := openRaw(t, path)
			if err := os.Truncate(path, offs[len(offs)-1]+5); err != nil { // into its 8-byte header
				t.Fatal(err)
			}
		},
		"zeroed": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 20), fileSize(t, path)-20); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeRecords(t, dir, Options{}, 0, 5)
			files := spoolFiles(t, dir, "spool")
			tear(t, files[0])
			s := openSpool(t, dir, Options{})
			appendOK(t, s, rec("p", 5))
			if got, want := ids(t, s), names(0, 1, 2, 3, 5); !slices.Equal(got, want) {
				t.Fatalf("after the torn record: %v, want %v", got, want)
			}
		})
	}
	t.Run("garbage appended", func(t *testing.T) {
		for _, junk := range [][]byte{[]byte("x"), []byte("garbage!!"), bytes.Repeat([]byte{0xff}, 300), make([]byte, 4096)} {
			dir := t.TempDir()
			writeRecords(t, dir, Options{}, 0, 3)
			path := spoolFiles(t, dir, "spool")[0]
			size := fileSize(t, path)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(junk)
			f.Close()
			s := openSpool(t, dir, Options{})
			if got := fileSize(t, path); got != size {
				t.Fatalf("junk %q: file is %d bytes after Open, want %d", junk[:1], got, size)
			}
			appendOK(t, s, rec("p", 3))
			s.Close()
			s = openSpool(t, dir, Options{})
			if got := ids(t, s); !slices.Equal(got, names(0, 1, 2, 3)) {
				t.Fatalf("junk %q: %v", junk[:1], got)
			}
		}
	})
	t.Run("file header torn", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, Options{EventsPerFile: 2}, 0, 4)
		// A new file whose first write never completed: only part of its header.
		// Or its size reached the disk and its data did not: zeros.
		for i, junk := range [][]byte{[]byte("QSP"), make([]byte, 4096)} {
			bad := filepath.Join(dir, segName(uint64(1000*(i+1)))) // beyond every file written
			if err := os.WriteFile(bad, junk, 0o600); err != nil {
				t.Fatal(err)
			}
			s := openSpool(t, dir, Options{EventsPerFile: 2})
			if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("torn new file kept: %v", err)
			}
			appendOK(t, s, rec("p", 4+i))
			if got := ids(t, s); !slices.Equal(got, names(seq(0, 5+i)...)) {
				t.Fatalf("got %v", got)
			}
			s.Close()
		}
	})
}

// A record that fails verification where no torn write explains it stops Open, naming file
// and offset.
func TestCorruptRecordStopsOpen(t *testing.T) {
	flip := func(t *testing.T, path string, off int64) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, 1)
		f.ReadAt(b, off)
		b[0] ^= 0x40
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, dir, path string, off int64) {
		t.Helper()
		_, err := Open(dir, Options{})
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File != path || ce.Offset != off {
			t.Fatalf("Open = %v, want a corrupt record in %s at %d", err, path, off)
		}
		if msg := err.Error(); !bytes.Contains([]byte(msg), []byte(path)) || !bytes.Contains([]byte(msg), fmt.Append(nil, off)) {
			t.Fatalf("error text %q names neither file nor offset", msg)
		}
		// The lock was released: the directory can be opened again once repaired.
		if _, err := Open(dir, Options{}); err == nil || errors.Is(err, ErrLocked) {
			t.Fatalf("second Open = %v", err)
		}
	}
	t.Run("middle of the newest file", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, Options{}, 0, 5)
		path := spoolFiles(t, dir, "spool")[0]
		flip(t, path, headerLen+frameHeaderLen+5) // in the first record's body
		check(t, dir, path, headerLen)
	})
	t.Run("last record of an older file", func(t *testing.T) {
		dir := t.TempDir()
		writeRecords(t, dir, Options{EventsPerFile: 3}, 0, 5)
		path := spoolFiles(t, dir, "spool")[0]
		size := fileSize(t, path)
		if err := os.Truncate(path, size-2); err != nil {
			t.Fatal(err)
		}
		// Its last frame: find its offset by reading the first two.
		s0 := openRaw(t, path)
		check(t, dir, path, s0[2])
	})
}

// openRaw lists the frame offsets of a file, reading headers only.
func openRaw(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for off := int64(headerLen); off+frameHeaderLen <= int64(len(b)); {
		offs = append(offs, off)
		n := int64(b[off]) | int64(b[off+1])<<8 | int64(b[off+2])<<16 | int64(b[off+3])<<24
		off += frameHeaderLen + n
	}
	return offs
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open in the process = %v, want ErrLocked", err)
	}
	out, err := helper(t, "lock", "SPOOL_DIR="+dir).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("LOCKED")) {
		t.Fatalf("Open from another process: %v\n%s", err, out)
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close = %v", err)
	}
	s.Close()
}

// A checkpoint whose checksum fails counts as none: the file is replayed again (duplicates
// the keys drop), never skipped.
func TestBadCheckpointReplaysAgain(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	for i := range 4 {
		appendOK(t, s, rec("p", i))
	}
	b, _ := s.Next(3)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ck := spoolFiles(t, dir, "ckpt")
	if len(ck) != 1 {
		t.Fatalf("checkpoints: %v", ck)
	}
	if err := os.WriteFile(ck[0], []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, dir, Options{})
	if got := ids(t, s); !slices.Equal(got, names(0, 1, 2, 3)) {
		t.Fatalf("after a bad checkpoint: %v", got)
	}
}
