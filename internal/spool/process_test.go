package spool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helper is a command that runs this test binary as TestHelperProcess in the given mode.
func helper(t testing.TB, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), "SPOOL_HELPER="+mode), env...)
	return cmd
}

// TestHelperProcess is not a test: it is the other process of the tests that need one.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("SPOOL_HELPER")
	if mode == "" {
		t.Skip("run by other tests as a subprocess")
	}
	dir := os.Getenv("SPOOL_DIR")
	switch mode {
	case "lock":
		if _, err := Open(dir, Options{}); errors.Is(err, ErrLocked) {
			fmt.Println("LOCKED", err)
		} else {
			fmt.Println("OPENED", err)
		}
	case "append":
		helperAppend(dir)
	case "diskfull":
		helperDiskFull(dir)
	}
}

const (
	crashWriters   = 4
	crashMaxAppend = 3 // records per Append, at most
	crashMaxBatch  = 5 // records per replay batch
)

// helperAppend appends in a loop from crashWriters goroutines, one partition each, while a
// replay loop commits; it prints "A g i" once record i of partition g is acknowledged and
// "C g i" once it is committed, until it is killed.
func helperAppend(dir string) {
	epf, _ := strconv.Atoi(os.Getenv("SPOOL_EPF"))
	starts := strings.Split(os.Getenv("SPOOL_START"), ",")
	s, err := Open(dir, Options{EventsPerFile: epf})
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	if err := s.Start(context.Background()); err != nil {
		fmt.Println("ERR", err)
		return
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format, args...) // one write per line
	}
	for g := range crashWriters {
		i, _ := strconv.Atoi(starts[g])
		go func() {
			for k := 0; ; k++ {
				var recs []Record
				for range 1 + k%crashMaxAppend {
					recs = append(recs, rec(fmt.Sprint("p", g), i))
					i++
				}
				if err := s.Append(context.Background(), recs); err != nil {
					say("ERR %v\n", err)
					return
				}
				say("A %d %d\n", g, i-1)
			}
		}()
	}
	for {
		b, err := s.Next(crashMaxBatch)
		if err != nil {
			say("ERR %v\n", err)
			return
		}
		if len(b.Records) == 0 {
			time.Sleep(time.Millisecond) // a reader's poll interval, not an ordering
			continue
		}
		if err := s.Commit(b); err != nil {
			say("ERR %v\n", err)
			return
		}
		last := map[int]int{}
		for _, r := range b.Records {
			var g, i int
			fmt.Sscanf(r.MessageID, "p%d-%d", &g, &i)
			last[g] = i
		}
		for g, i := range last {
			say("C %d %d\n", g, i)
		}
	}
}

// A process killed with SIGKILL at a random moment loses no acknowledged record and invents
// none: after reopening, each partition's records are one contiguous run, in order, that
// starts right after what was committed and reaches every acknowledged record — at most one
// Append beyond it (written, not yet acknowledged). Several runs share the directory, so
// restarts over files, checkpoints and torn tails are exercised too.
func TestCrashKeepsEveryAcknowledgedRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocesses")
	}
	dir := t.TempDir()
	start := make([]int, crashWriters)
	for run := range 5 {
		var startEnv []string
		for _, v := range start {
			startEnv = append(startEnv, strconv.Itoa(v))
		}
		cmd := helper(t, "append", "SPOOL_DIR="+dir, "SPOOL_EPF=7", "SPOOL_START="+strings.Join(startEnv, ","))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out []string
		first := make(chan struct{})
		read := make(chan struct{})
		go func() {
			defer close(read)
			r := bufio.NewReader(stdout)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return // a last line without its newline was cut by the kill: ignored
				}
				if len(out) == 0 {
					close(first)
				}
				out = append(out, line)
			}
		}()
		select {
		case <-first:
		case <-read:
		case <-time.After(20 * time.Second):
		}
		time.Sleep(time.Duration(20+rand.IntN(150)) * time.Millisecond) // a random kill point, on purpose
		cmd.Process.Signal(syscall.SIGKILL)
		<-read
		cmd.Wait()

		lastAck, lastCommit := slices.Clone(start), slices.Clone(start)
		for i := range lastAck {
			lastAck[i]--
			lastCommit[i]--
		}
		for _, line := range out {
			var kind string
			var g, i int
			if _, err := fmt.Sscanf(line, "%s %d %d", &kind, &g, &i); err != nil {
				t.Fatalf("run %d: child said %q\n%s", run, line, stderr.String())
			}
			switch kind {
			case "A":
				lastAck[g] = max(lastAck[g], i)
			case "C":
				lastCommit[g] = max(lastCommit[g], i)
			}
		}

		s, err := Open(dir, Options{EventsPerFile: 7})
		if err != nil {
			t.Fatalf("run %d: reopen after SIGKILL: %v", run, err)
		}
		b, err := s.Next(1 << 30)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int][]int{}
		for _, r := range b.Records {
			var g, i int
			fmt.Sscanf(r.MessageID, "p%d-%d", &g, &i)
			want := rec(fmt.Sprint("p", g), i)
			if r.Queue != want.Queue || r.Partition != want.Partition || r.MessageID != want.MessageID ||
				r.Key != want.Key || !bytes.Equal(r.Payload, want.Payload) {
				t.Fatalf("run %d: record %+v is not what was written", run, r)
			}
			got[g] = append(got[g], i)
		}
		acked := 0
		for g := range crashWriters {
			rs := got[g]
			for k := 1; k < len(rs); k++ {
				if rs[k] != rs[k-1]+1 {
					t.Fatalf("run %d: partition %d replays %v: not one run in order", run, g, rs)
				}
			}
			acked += lastAck[g] - start[g] + 1
			next := lastCommit[g] + 1 // the first record not known to be committed
			if len(rs) == 0 {
				if lastAck[g] > lastCommit[g]+crashMaxBatch {
					t.Fatalf("run %d: partition %d: nothing left, yet %d acknowledged and only %d committed",
						run, g, lastAck[g], lastCommit[g])
				}
				start[g] = max(lastAck[g], lastCommit[g]) + crashMaxAppend + crashMaxBatch + 1
				continue
			}
			first, last := rs[0], rs[len(rs)-1]
			switch {
			case first < next:
				t.Fatalf("run %d: partition %d replays %d, committed up to %d", run, g, first, lastCommit[g])
			case first > next+crashMaxBatch || first < start[g]:
				t.Fatalf("run %d: partition %d starts at %d, after committed %d: records lost", run, g, first, lastCommit[g])
			case last < lastAck[g]:
				t.Fatalf("run %d: partition %d ends at %d, yet %d was acknowledged", run, g, last, lastAck[g])
			case last > lastAck[g]+crashMaxAppend:
				t.Fatalf("run %d: partition %d holds %d, beyond anything written (acknowledged %d)", run, g, last, lastAck[g])
			}
			start[g] = last + 1
		}
		t.Logf("run %d: %d acknowledged, %d pending after the kill", run, acked, len(b.Records))
		if acked == 0 && run == 0 {
			t.Fatalf("the child acknowledged nothing\n%s", stderr.String())
		}
		// The records left are replayed, as the drain would, before the next run.
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// diskFullScenario appends until the disk is full, checks the failure kept nothing, frees
// space with free and appends again. It returns the ids acknowledged, in order.
func diskFullScenario(dir string, free func() error) ([]string, error) {
	s, err := Open(dir, Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.Start(context.Background()); err != nil {
		return nil, err
	}
	var acked []string
	big := func(part string, i int) Record {
		r := rec(part, i)
		r.Payload = fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, strings.Repeat("x", 1500))
		return r
	}
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ {
		recs := []Record{big("p", i)}
		if i%4 == 3 { // multi-record Appends, all-or-nothing too
			recs = append(recs, big("q", i), big("r", i))
		}
		if werr = s.Append(context.Background(), recs); werr == nil {
			for _, r := range recs {
				acked = append(acked, r.MessageID)
			}
		}
	}
	if werr == nil {
		return nil, errors.New("the disk never filled")
	}
	if !errors.Is(werr, ErrWrite) {
		return nil, fmt.Errorf("Append on a full disk = %v, want ErrWrite", werr)
	}
	// Nothing partial: the file is exactly its durable part (the writer is idle: Append returned).
	path := filepath.Join(dir, segName(s.active.seg.seq))
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() != s.active.size {
		return nil, fmt.Errorf("after the failed Append the file is %d bytes, its durable part %d", st.Size(), s.active.size)
	}
	if s.Pending() != len(acked) {
		return nil, fmt.Errorf("Pending = %d, acknowledged %d", s.Pending(), len(acked))
	}
	if err := free(); err != nil {
		return nil, err
	}
	for i := 1000; i < 1003; i++ {
		r := big("p", i)
		if err := s.Append(context.Background(), []Record{r}); err != nil {
			return nil, fmt.Errorf("Append after freeing space: %w", err)
		}
		acked = append(acked, r.MessageID)
	}
	return acked, nil
}

// helperDiskFull runs the disk-full scenario under RLIMIT_FSIZE: writes past 64 KiB fail with
// EFBIG (SIGXFSZ, which would kill the process, is ignored); raising the limit frees space.
func helperDiskFull(dir string) {
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		fmt.Println("FAIL", err)
		return
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 64 << 10, Max: old.Max}); err != nil {
		fmt.Println("FAIL", err)
		return
	}
	acked, err := diskFullScenario(dir, func() error { return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) })
	if err != nil {
		fmt.Println("FAIL", err)
		return
	}
	for _, id := range acked {
		fmt.Println("ACK", id)
	}
	fmt.Println("DONE")
}

// Disk full: Append returns ErrWrite, keeps nothing of the failed Append, and works again once
// space is freed. A 64 KiB tmpfs when it can be mounted (root), else — or with
// SPOOL_TEST_RLIMIT=1 — RLIMIT_FSIZE.
func TestDiskFullKeepsNothingPartial(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var acked []string
	mount := func() error {
		if os.Getenv("SPOOL_TEST_RLIMIT") == "1" {
			return errors.New("not tried: SPOOL_TEST_RLIMIT=1")
		}
		return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k")
	}
	if err := mount(); err == nil {
		t.Cleanup(func() { syscall.Unmount(dir, 0) })
		t.Log("disk full: a 64 KiB tmpfs")
		filler := filepath.Join(dir, "filler")
		if err := os.WriteFile(filler, make([]byte, 16<<10), 0o600); err != nil {
			t.Fatal(err)
		}
		if acked, err = diskFullScenario(dir, func() error { return os.Remove(filler) }); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("disk full: RLIMIT_FSIZE in a subprocess (tmpfs: %v)", err)
		out, err := helper(t, "diskfull", "SPOOL_DIR="+dir).Output()
		if err != nil || !bytes.Contains(out, []byte("DONE")) {
			t.Fatalf("subprocess: %v\n%s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "ACK "); ok {
				acked = append(acked, id)
			}
		}
	}
	t.Logf("%d records acknowledged before and after the disk was full", len(acked))
	s := openSpool(t, dir, Options{})
	if got := ids(t, s); !slices.Equal(got, acked) {
		t.Fatalf("after reopening: %v,\nwant %v", got, acked)
	}
}
