package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/testserver"
)

// Request bodies and memory (docs/api/README.md §2.4, docs/api/operations.md §9.2), against a
// real broker running in this test process.

// Stalled uploads hold only what they sent: 32 connections each declaring a 64 MiB body and
// sending ten bytes must not grow the broker's heap by anything like 32 × 64 MiB. Not parallel:
// the heap is measured in-process, and parallel tests start only once this one is done.
func TestStalledUploadsHoldOnlyWhatTheySent(t *testing.T) {
	srv := testserver.Start(t, testDSN, testserver.Options{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	const conns = 32
	const limit = 256 << 20

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse

	for range conns {
		conn, _ := dialRaw(t, addr)
		fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{\"items\":", 64<<20)
	}
	// The broker reads the ten bytes at once and then waits for the rest; sampling for a
	// while catches whatever it allocates on their arrival.
	var peak uint64
	// (Real elapsed time, not an ordering: a sampling window.)
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	growth := int64(peak) - int64(before)
	t.Logf("heap in use: %d MiB before, %d MiB at the peak while %d uploads stall (growth %d KiB)",
		before>>20, peak>>20, conns, growth>>10)
	if growth > limit {
		t.Fatalf("heap grew by %d MiB while %d uploads stalled after 10 bytes; want under %d MiB",
			growth>>20, conns, limit>>20)
	}
	// The stalled requests have not disturbed the broker.
	if code, raw := doURL(t, http.MethodGet, srv.URL+"/api/v1/pop/queue/q-stalled?wait=false", nil); code != http.StatusNoContent {
		t.Fatalf("pop beside the stalled uploads: %d %s", code, raw)
	}
}

// pushBody is a push of one message whose payload string has n bytes.
func pushBody(queue string, n int) []byte {
	return []byte(`{"items":[{"queue":"` + queue + `","payload":"` + strings.Repeat("p", n) + `"}]}`)
}

// Once the in-flight budget is spent, a big body waits a second and gets 503 Server busy with
// Retry-After: 1, on every route, the transaction route included; small bodies still pass;
// when room returns, the big body passes too.
func TestInflightBudgetRefusesBigBodiesOnly(t *testing.T) {
	t.Parallel()
	// 4 MiB is under the configuration's 64 MiB floor (one body of the largest size); set on
	// the Config directly, it keeps this test's uploads small.
	addr := startTuned(t, func(c *config.Config) { c.MaxInflightBodyBytes = 4 << 20 })
	url := "http://" + addr
	queue := testQueueName(t)

	// A 3 MiB head of an 8 MiB push, then nothing: its buffer (4 MiB once 2 MiB are in) holds
	// the whole budget.
	hog, hogReader := dialRaw(t, addr)
	fmt.Fprintf(hog, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 8<<20)
	if _, err := hog.Write(bytes.Repeat([]byte(" "), 3<<20)); err != nil {
		t.Fatal(err)
	}

	// Until the hog's bytes are in, a big body may still pass. The probe is not JSON, so it
	// costs no database work and leaves the budget at once: the hog, if it is waiting for its
	// last step, gets it.
	probe := bytes.Repeat([]byte("!"), 1<<20)
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, raw, err := roundTrip(t.Context(), http.DefaultClient, http.MethodPost, url+"/api/v1/push", probe, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the budget never filled: %d %.200s", resp.StatusCode, raw)
		}
	}
	resp, raw, err := roundTrip(t.Context(), http.DefaultClient, http.MethodPost, url+"/api/v1/push", pushBody(queue, 1<<20), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantBusy(t, "push", resp, raw)

	txn := []byte(`{"operations":[{"type":"push","items":[{"queue":"` + queue + `","payload":"` +
		strings.Repeat("t", 1<<20) + `"}]}]}`)
	resp, raw, err = roundTrip(t.Context(), http.DefaultClient, http.MethodPost, url+"/api/v1/transaction", txn, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantBusy(t, "transaction", resp, raw)

	// A body of at most 64 KiB is never refused for memory.
	resp, raw, err = roundTrip(t.Context(), http.DefaultClient, http.MethodPost, url+"/api/v1/push", pushBody(queue, 60<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("small push beside a spent budget: %d %s", resp.StatusCode, raw)
	}

	// The hog gives up; its bytes are released and big bodies pass again.
	hog.Close()
	_, _ = io.Copy(io.Discard, hogReader)
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, raw, err = roundTrip(t.Context(), http.DefaultClient, http.MethodPost, url+"/api/v1/push", pushBody(queue, 1<<20), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("big push once the budget is free: %d %.200s", resp.StatusCode, raw)
	}
}

func wantBusy(t *testing.T, route string, resp *http.Response, raw []byte) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable || string(raw) != `{"error":"Server busy"}` {
		t.Fatalf("%s over a spent budget: %d %.200s, want 503 Server busy", route, resp.StatusCode, raw)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("%s: Retry-After %q, want 1", route, ra)
	}
	if resp.Close {
		t.Errorf("%s: the body was drained, the connection should stay open", route)
	}
}

// A body of 64 MiB + 1 gets 413, even for a client that writes the whole body before it reads
// anything, with a declared length and chunked; the broker stays usable.
func TestBodyOver64MiBGets413AfterWholeBody(t *testing.T) {
	b := fakeSetup(t)
	addr := strings.TrimPrefix(b.srv.URL, "http://")
	const size = 64<<20 + 1
	head := `{"items":[{"queue":"` + b.queue + `","payload":"`
	tail := `"}]}`
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for _, chunked := range []bool{false, true} {
		conn, br := dialRaw(t, addr)
		bw := bufio.NewWriterSize(conn, 64<<10)
		fmt.Fprintf(bw, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\n")
		if chunked {
			fmt.Fprintf(bw, "Transfer-Encoding: chunked\r\n\r\n")
		} else {
			fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", size)
		}
		// A valid push, were it not too large: head, padding, tail.
		pieces := [][]byte{[]byte(head)}
		for rest := size - len(head) - len(tail); rest > 0; rest -= len(chunk) {
			pieces = append(pieces, chunk[:min(rest, len(chunk))])
		}
		pieces = append(pieces, []byte(tail))
		for _, p := range pieces {
			if chunked {
				fmt.Fprintf(bw, "%x\r\n", len(p))
			}
			if _, err := bw.Write(p); err != nil {
				t.Fatalf("chunked %v: write: %v", chunked, err)
			}
			if chunked {
				bw.WriteString("\r\n")
			}
		}
		if chunked {
			bw.WriteString("0\r\n\r\n")
		}
		if err := bw.Flush(); err != nil {
			t.Fatalf("chunked %v: flush: %v", chunked, err)
		}
		resp, got := readAnswer(t, br)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || got != `{"error":"Request body too large"}` {
			t.Fatalf("chunked %v: got %d %q", chunked, resp.StatusCode, got)
		}
	}
}
