// Package dashboard serves the web dashboard (docs/api/dashboard.md) at / and /assets/*: the
// files built from web/ by `make web` and committed under dist/, embedded in the binary so that
// `go build` needs no Node, or a directory named by WEBAPP_ROOT (docs/api/operations.md §1.3).
//
// The package is a leaf: httpapi mounts the handler on its public routes and app builds it.
// The files never need the database.
package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
)

//go:embed dist
var embedded embed.FS

// CSP is the Content-Security-Policy of every dashboard answer (docs/api/dashboard.md §4.1):
// no inline script or style, no other origin.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'"

// file is one servable file, compressed once at start so that every answer is a copy.
type file struct {
	body, gz []byte // gz is nil when compression does not pay
	etag     string
	ctype    string
}

// Handler serves index.html at / and the files of assets/ at /assets/<name>.
type Handler struct {
	files map[string]*file // by URL path ("/", "/assets/app-HASH.js"); nil in directory mode
	root  string           // WEBAPP_ROOT: read from disk on every request (for development)
}

// New returns the handler over the embedded build, or over root when it is not empty.
func New(root string) (*Handler, error) {
	if root != "" {
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("WEBAPP_ROOT %q is not a directory", root)
		}
		return &Handler{root: root}, nil
	}
	sub, err := fs.Sub(embedded, "dist")
	if err != nil {
		return nil, err
	}
	h := &Handler{files: map[string]*file{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		key := "/" + p
		if p == "index.html" {
			key = "/"
		} else if !strings.HasPrefix(p, "assets/") {
			return nil // only index.html and assets/ are served
		}
		h.files[key] = newFile(p, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.files["/"] == nil {
		return nil, fmt.Errorf("dashboard: the embedded build has no index.html (run make web)")
	}
	return h, nil
}

// newFile prepares the answer for the file named p holding b.
func newFile(p string, b []byte) *file {
	sum := sha256.Sum256(b)
	f := &file{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: mime.TypeByExtension(path.Ext(p))}
	if f.ctype == "" {
		f.ctype = "application/octet-stream"
	}
	if len(b) > 512 {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		if buf.Len() < len(b) {
			f.gz = buf.Bytes()
		}
	}
	return f
}

// ServeHTTP answers GET and HEAD of / and /assets/<name>; anything else is the API's JSON 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	index := p == "/"
	var f *file
	if h.files != nil {
		f = h.files[p]
	} else {
		f = h.load(p)
	}
	if f == nil {
		notFound(w)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Content-Type", f.ctype)
	hd.Set("ETag", f.etag)
	hd.Set("Vary", "Accept-Encoding")
	if index || h.files == nil {
		hd.Set("Cache-Control", "no-cache")
	} else {
		// Asset names carry their content hash (web/build.mjs): a new build is a new name.
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// load reads one file of WEBAPP_ROOT, refusing anything outside index.html and assets/.
func (h *Handler) load(p string) *file {
	name := "index.html"
	if p != "/" {
		rest, ok := strings.CutPrefix(p, "/assets/")
		if !ok || rest == "" || strings.Contains(rest, "/") || !fs.ValidPath(rest) {
			return nil
		}
		name = "assets/" + rest
	}
	b, err := fs.ReadFile(os.DirFS(h.root), name)
	if err != nil {
		return nil
	}
	return newFile(name, b)
}

// notFound is the API's 404 (docs/api/README.md §2.1), also for an unknown asset.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	w.Write([]byte(`{"error":"Not found"}`))
}

// etagMatches reports whether an If-None-Match list names etag (or is "*").
func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip (q=0 refuses it).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") || strings.TrimSpace(name) == "*" {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
