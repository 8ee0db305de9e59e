package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Texts of the two refusals of admission (docs/api/operations.md §1.3, "Web pages").
const (
	textOriginNotAllowed = "Origin not allowed"
	textHostNotAllowed   = "Host not allowed"
)

// admission decides, before routing and before any work, whether a request may reach the
// broker at all, and which CORS headers its answer carries (docs/api/README.md §2.7,
// docs/api/operations.md §1.3). It closes two ways a web page the user visits could drive a
// broker that has no authentication:
//
//   - Origin: a browser names the page's origin on every cross-origin fetch, and on a "simple"
//     one (a POST of text/plain, say) it sends the request without asking first. CORS headers
//     only stop the page from reading the answer; the broker must refuse the request itself.
//   - Host: DNS rebinding points a page's own name at 127.0.0.1, so its requests are
//     same-origin for the browser. Only the Host header, which names the page's domain, tells.
//
// A nil *admission (Router's default) admits every request with the fixed headers of §2.7.
type admission struct {
	// anyOrigin keeps Queen's behaviour: every origin, "Access-Control-Allow-Origin: *". Set
	// when authentication is on (tokens gate every route but the public ones) or when
	// CORS_ALLOWED_ORIGINS holds "*".
	anyOrigin bool
	// origins are the listed origins, normalized (config.NormalizeOrigin).
	origins map[string]bool
	// checkHost turns the Host check on: ALLOWED_HOSTS is set, or the broker listens on
	// loopback only.
	checkHost bool
	// hosts are the names Host may carry besides localhost and IP addresses: exact names, and
	// suffixes (".example.com") in domains.
	hosts   map[string]bool
	domains []string
}

// newAdmission builds the policy of a broker: authentication on or off, the listed origins
// (already normalized), ALLOWED_HOSTS and HOST.
func newAdmission(authOn bool, origins, hosts []string, listenHost string) *admission {
	a := &admission{anyOrigin: authOn, origins: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range origins {
		if o == "*" {
			a.anyOrigin = true
		}
		a.origins[o] = true
	}
	anyHost := false
	for _, h := range hosts {
		switch {
		case h == "*":
			anyHost = true
		case strings.HasPrefix(h, "."):
			a.domains = append(a.domains, h)
			a.hosts[h[1:]] = true
		default:
			a.hosts[h] = true
		}
	}
	a.checkHost = !anyHost && (len(hosts) > 0 || isLoopback(listenHost))
	if h := strings.ToLower(strings.Trim(listenHost, "[]")); h != "" {
		a.hosts[h] = true
	}
	return a
}

// isLoopback tells whether HOST listens on this machine only: localhost or a loopback IP.
// 0.0.0.0 and "" listen everywhere.
func isLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// admit writes the CORS headers req's answer carries and reports whether req may go on; when it
// may not, it has answered (421 for a foreign Host, 403 for a foreign Origin).
func (a *admission) admit(w http.ResponseWriter, req *http.Request) bool {
	h := w.Header()
	if a == nil {
		setCORS(h)
		return true
	}
	if a.checkHost && !a.hostAllowed(req.Host) {
		writeError(w, http.StatusMisdirectedRequest, textHostNotAllowed)
		return false
	}
	if a.anyOrigin {
		setCORS(h)
		return true
	}
	// The answer depends on Origin: a cache must not hand one origin's answer to another.
	h.Add("Vary", "Origin")
	origin := req.Header.Get("Origin")
	if origin == "" {
		// Not a browser's cross-origin request (clients, curl, a navigation): §2.7's headers
		// as ever. Vary keeps a browser from reusing such an answer for a page's fetch.
		setCORS(h)
		return true
	}
	if !a.originAllowed(origin, req) {
		writeError(w, http.StatusForbidden, textOriginNotAllowed)
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	return true
}

// originAllowed tells whether origin is the broker's own (the page came from the Host the
// request names, as the dashboard's does) or a listed one. "null" (a sandboxed frame, a file)
// is neither.
func (a *admission) originAllowed(origin string, req *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	norm := strings.ToLower(u.Scheme + "://" + u.Host)
	if a.origins[norm] {
		return true
	}
	return sameHostPort(u, req.Host)
}

// sameHostPort compares an origin's host and port with a Host header, the scheme's default port
// standing for a missing one on either side.
func sameHostPort(u *url.URL, host string) bool {
	def := "80"
	if u.Scheme == "https" {
		def = "443"
	}
	oh, op := splitHostPort(u.Host, def)
	rh, rp := splitHostPort(host, def)
	return oh != "" && strings.EqualFold(oh, rh) && op == rp
}

// splitHostPort splits "host[:port]" (IPv6 in brackets), with def for a missing port.
func splitHostPort(hp, def string) (string, string) {
	if h, p, err := net.SplitHostPort(hp); err == nil {
		return strings.Trim(h, "[]"), p
	}
	return strings.Trim(hp, "[]"), def
}

// hostAllowed tells whether a Host header names this broker: localhost, an IP address (a
// literal address cannot be rebound to another machine), the listen address or an
// ALLOWED_HOSTS entry. A request without Host (HTTP/1.0) names nothing a page could forge.
func (a *admission) hostAllowed(host string) bool {
	if host == "" {
		return true
	}
	name, _ := splitHostPort(host, "")
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "localhost" || net.ParseIP(name) != nil || a.hosts[name] {
		return true
	}
	for _, d := range a.domains {
		if strings.HasSuffix(name, d) {
			return true
		}
	}
	return false
}
