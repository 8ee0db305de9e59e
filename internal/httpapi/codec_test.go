package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const tooLargeBody = `{"error":"Request body too large"}`

// countingReader yields zeros forever (or up to limit) and counts what was read.
type countingReader struct {
	n, limit int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.limit >= 0 && c.n >= c.limit {
		return 0, io.EOF
	}
	if c.limit >= 0 {
		p = p[:min(int64(len(p)), c.limit-c.n)]
	}
	clear(p)
	c.n += int64(len(p))
	return len(p), nil
}

func TestReadBodySizes(t *testing.T) {
	tests := []struct {
		name      string
		size      int64 // bytes the client sends; -1 = endless
		declared  int64 // Content-Length; -1 = unknown
		wantOK    bool
		wantDrain int64 // bytes that must have been read
	}{
		{"empty", 0, 0, true, 0},
		{"small", 10, 10, true, 10},
		{"small chunked", 10, -1, true, 10},
		{"at limit", MaxBodyBytes, MaxBodyBytes, true, MaxBodyBytes},
		{"at limit chunked", MaxBodyBytes, -1, true, MaxBodyBytes},
		{"one over", MaxBodyBytes + 1, MaxBodyBytes + 1, false, MaxBodyBytes + 1},
		{"one over chunked", MaxBodyBytes + 1, -1, false, MaxBodyBytes + 1},
		{"65 MiB chunked", 65 << 20, -1, false, 65 << 20},
		{"endless chunked stops at drain cap", -1, -1, false, maxDrainBytes},
		{"declared huge stops at drain cap", -1, 1 << 40, false, maxDrainBytes},
		{"declared huge, short body", 100 << 20, 1 << 40, false, 100 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{limit: tc.size}
			req := httptest.NewRequest("POST", "/x", io.NopCloser(src))
			req.ContentLength = tc.declared
			rec := httptest.NewRecorder()
			body, ok := readBody(rec, req)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (status %d)", ok, tc.wantOK, rec.Code)
			}
			if src.n != tc.wantDrain {
				t.Errorf("read %d bytes, want %d", src.n, tc.wantDrain)
			}
			if ok {
				if int64(len(body)) != tc.size || int64(cap(body)) > MaxBodyBytes {
					t.Errorf("len %d cap %d", len(body), cap(body))
				}
				return
			}
			if rec.Code != http.StatusRequestEntityTooLarge || rec.Body.String() != tooLargeBody {
				t.Errorf("got %d %s", rec.Code, rec.Body)
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestReadBodyErrors(t *testing.T) {
	rec := httptest.NewRecorder()
	if _, ok := readBody(rec, httptest.NewRequest("POST", "/x", failingReader{})); ok || rec.Code != 400 {
		t.Errorf("read error: ok=%v status %d", ok, rec.Code)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/x", strings.NewReader("0123456789"))
	req.Body = http.MaxBytesReader(rec, req.Body, 5)
	if _, ok := readBody(rec, req); ok || rec.Code != 413 || rec.Body.String() != tooLargeBody {
		t.Errorf("MaxBytesReader: ok=%v %d %s", ok, rec.Code, rec.Body)
	}
}

func TestReadJSON(t *testing.T) {
	tests := []struct {
		body    string
		status  int // 0 = accepted
		wantErr string
	}{
		{`{"a":1}`, 0, ""},
		{` [1, 2] `, 0, ""},
		{``, 400, "Empty request body"},
		{" \n\t\r ", 400, "Empty request body"},
		{`{bad`, 400, "Invalid JSON: invalid character 'b' looking for beginning of object key string"},
		{`{"a":1`, 400, "Invalid JSON: unexpected end of JSON input"},
		{`{"a":1} x`, 400, "Invalid JSON: invalid character 'x' after top-level value"},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			rec := httptest.NewRecorder()
			var v json.RawMessage
			ok := readJSON(rec, httptest.NewRequest("POST", "/x", strings.NewReader(tc.body)), &v)
			if ok != (tc.status == 0) {
				t.Fatalf("ok = %v; %d %s", ok, rec.Code, rec.Body)
			}
			if ok {
				return
			}
			var got map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != tc.status || got["error"] != tc.wantErr {
				t.Errorf("got %d %s, want %d %q", rec.Code, rec.Body, tc.status, tc.wantErr)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	tests := []struct {
		status int
		v      any
		want   string
	}{
		{200, map[string]string{"payload": "<a href='x'>&</a>"}, `{"payload":"<a href='x'>&</a>"}`},
		{201, []int{1, 2}, `[1,2]`},
		{204, map[string]int{"x": 1}, ``},
		{200, func() {}, `{"error":"Internal server error"}`},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		writeJSON(rec, tc.status, tc.v)
		wantStatus := tc.status
		if tc.want == `{"error":"Internal server error"}` {
			wantStatus = 500
		}
		if rec.Code != wantStatus || rec.Body.String() != tc.want {
			t.Errorf("writeJSON(%d, %v) = %d %q, want %d %q", tc.status, tc.v, rec.Code, rec.Body, wantStatus, tc.want)
		}
		if tc.want != "" && rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
		}
	}
	rec := httptest.NewRecorder()
	writeError(rec, 404, `say "hi" <now>`)
	if got := rec.Body.String(); got != `{"error":"say \"hi\" <now>"}` {
		t.Errorf("writeError body %s", got)
	}
}

// bodyServer serves a route that reads the body through readBody, as every
// route with a body does, behind the real router and net/http server.
func bodyServer(t *testing.T) *httptest.Server {
	t.Helper()
	r := NewRouter()
	r.Handle("POST", "/api/v1/push", LevelReadWrite, func(w http.ResponseWriter, req *http.Request) {
		body, ok := readBody(w, req)
		if !ok {
			return
		}
		writeJSON(w, http.StatusCreated, map[string]int{"size": len(body)})
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

// TestTooLargeRawClient plays a client that writes its entire body before it
// reads anything, which is what gets a reset when the server answers early.
func TestTooLargeRawClient(t *testing.T) {
	srv := bodyServer(t)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	// 100 MiB leaves far more unread than socket buffers absorb, so a missing
	// drain shows up as a reset even on loopback.
	tests := []struct {
		name    string
		size    int
		chunked bool
	}{
		{"65MiB content-length", 65 << 20, false},
		{"65MiB chunked", 65 << 20, true},
		{"100MiB content-length", 100 << 20, false},
		{"100MiB chunked", 100 << 20, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(2 * time.Minute))
			bw := bufio.NewWriter(conn)
			fmt.Fprintf(bw, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\n")
			if tc.chunked {
				fmt.Fprintf(bw, "Transfer-Encoding: chunked\r\n\r\n")
			} else {
				fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", size)
			}
			for sent := 0; sent < size; sent += len(chunk) {
				if tc.chunked {
					fmt.Fprintf(bw, "%x\r\n", len(chunk))
				}
				if _, err := bw.Write(chunk); err != nil {
					t.Fatalf("write after %d bytes: %v", sent, err)
				}
				if tc.chunked {
					bw.WriteString("\r\n")
				}
			}
			if tc.chunked {
				bw.WriteString("0\r\n\r\n")
			}
			if err := bw.Flush(); err != nil {
				t.Fatalf("flush: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading response: %v", err)
			}
			checkTooLarge(t, resp)
		})
	}
}

// TestTooLargeHTTPClient streams through net/http's client, with a declared
// length and chunked through a pipe.
func TestTooLargeHTTPClient(t *testing.T) {
	srv := bodyServer(t)
	const size = 65 << 20
	tests := []struct {
		name     string
		declared bool
	}{{"content-length", true}, {"chunked pipe", false}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				_, err := io.Copy(pw, &countingReader{limit: size})
				pw.CloseWithError(err)
			}()
			req, err := http.NewRequest("POST", srv.URL+"/api/v1/push", pr)
			if err != nil {
				t.Fatal(err)
			}
			if tc.declared {
				req.ContentLength = size
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			checkTooLarge(t, resp)
		})
	}
}

func TestBodyAtLimitOverHTTP(t *testing.T) {
	srv := bodyServer(t)
	resp, err := srv.Client().Post(srv.URL+"/api/v1/push", "application/json",
		io.NopCloser(&countingReader{limit: MaxBodyBytes}))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || string(b) != fmt.Sprintf(`{"size":%d}`, MaxBodyBytes) {
		t.Errorf("got %d %s", resp.StatusCode, b)
	}
}

func checkTooLarge(t *testing.T, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || string(b) != tooLargeBody {
		t.Errorf("got %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	checkCORS(t, resp.Header)
}
