package dashboard

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestEmbeddedIndexAndAssets: / answers index.html with the CSP and headers of
// docs/api/dashboard.md §4.1, every asset it names answers with immutable caching, and the page
// holds no inline script or style and names no other origin.
func TestEmbeddedIndexAndAssets(t *testing.T) {
	h, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	res := serve(t, h, "GET", "/", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": CSP,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-cache",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	html := string(body)
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(html) || strings.Contains(html, "style=") || strings.Contains(html, "<style") {
		t.Errorf("index.html has inline script or style:\n%s", html)
	}
	if strings.Contains(html, "http://") || strings.Contains(html, "https://") || strings.Contains(html, `src="/`) || strings.Contains(html, `href="/`) {
		t.Errorf("index.html names another origin or an absolute path (a proxy may mount it under a sub-path):\n%s", html)
	}
	refs := regexp.MustCompile(`(?:src|href)="(assets/[^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 3 {
		t.Fatalf("index.html names %d assets, want the script, the stylesheet and the theme script", len(refs))
	}
	for _, m := range refs {
		res := serve(t, h, "GET", "/"+m[1], nil)
		if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || res.Header.Get("Content-Security-Policy") != CSP {
			t.Errorf("GET /%s: %d, Cache-Control %q", m[1], res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
}

// TestConditionalAndCompressed: ETag and If-None-Match give 304; gzip when accepted, and the
// compressed body is the file; HEAD has headers and no body.
func TestConditionalAndCompressed(t *testing.T) {
	h, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	var script string
	for p := range h.files {
		if strings.HasPrefix(p, "/assets/app-") {
			script = p
		}
	}
	plain := serve(t, h, "GET", script, nil)
	raw, _ := io.ReadAll(plain.Body)
	etag := plain.Header.Get("ETag")
	if etag == "" || plain.Header.Get("Content-Encoding") != "" {
		t.Fatalf("plain GET: ETag %q, Content-Encoding %q", etag, plain.Header.Get("Content-Encoding"))
	}
	if res := serve(t, h, "GET", script, map[string]string{"If-None-Match": etag}); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", res.StatusCode)
	}
	gz := serve(t, h, "GET", script, map[string]string{"Accept-Encoding": "br, gzip"})
	if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: Content-Encoding %q Vary %q", gz.Header.Get("Content-Encoding"), gz.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unz, _ := io.ReadAll(zr)
	if !bytes.Equal(unz, raw) {
		t.Error("gzip body differs from the file")
	}
	if res := serve(t, h, "GET", script, map[string]string{"Accept-Encoding": "gzip;q=0"}); res.Header.Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 still compressed")
	}
	head := serve(t, h, "HEAD", script, nil)
	if b, _ := io.ReadAll(head.Body); head.StatusCode != 200 || len(b) != 0 || head.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD: %d, %d body bytes, Content-Length %q", head.StatusCode, len(b), head.Header.Get("Content-Length"))
	}
}

// TestUnknownAssetIsTheAPIs404: an unknown or traversing asset answers 404 {"error":"Not found"}.
func TestUnknownAssetIsTheAPIs404(t *testing.T) {
	h, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "assets"), 0o755)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><title>dev</title>"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("no"), 0o644)
	d, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, hh := range []http.Handler{h, d} {
		for _, p := range []string{"/assets/nope.js", "/assets/", "/assets/../secret.txt", "/assets/..", "/index.html", "/secret.txt"} {
			res := serve(t, hh, "GET", p, nil)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 404 || string(b) != `{"error":"Not found"}` {
				t.Errorf("GET %s: %d %s", p, res.StatusCode, b)
			}
		}
	}
	if res := serve(t, d, "GET", "/", nil); res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("WEBAPP_ROOT /: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	if _, err := New(filepath.Join(dir, "missing")); err == nil {
		t.Error("a WEBAPP_ROOT that is not a directory was accepted")
	}
}

// TestSizeBudget: the embedded build stays within docs/api/dashboard.md §4.1's 250 KB gzip.
func TestSizeBudget(t *testing.T) {
	h, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range h.files {
		if f.gz != nil {
			total += len(f.gz)
		} else {
			total += len(f.body)
		}
	}
	if total > 250<<10 {
		t.Errorf("assets are %d bytes gzip, over the 250 KB budget", total)
	}
	t.Logf("assets: %d bytes gzip", total)
}
