package httpapi

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
)

// BenchmarkReadBody measures reading a request body into memory, with a declared length and
// chunked, at the sizes of a small ack, a 100-item push and a large batch: the buffer grows as
// the bytes arrive instead of being sized by Content-Length, which must stay cheap.
func BenchmarkReadBody(b *testing.B) {
	for _, size := range []int{512, 64 << 10, 1 << 20, 16 << 20} {
		src := bytes.Repeat([]byte("x"), size)
		for _, declared := range []bool{true, false} {
			name := "size=" + strconv.Itoa(size)
			if !declared {
				name += "/chunked"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest("POST", "/x", io.NopCloser(bytes.NewReader(src)))
					req.ContentLength = -1
					if declared {
						req.ContentLength = int64(size)
					}
					body, ok := readBody(httptest.NewRecorder(), req)
					if !ok || len(body) != size {
						b.Fatal("short read")
					}
				}
			})
		}
	}
}
