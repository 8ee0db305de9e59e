// Package httpapi serves the Queen MQ HTTP API: routing, request decoding and
// the route handlers.
package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Level is a route's access level (docs/api/README.md §2.8). The router only records it;
// an authentication middleware reads it back with RouteLevel.
type Level int

// Access levels, ordered so that a higher level includes the lower ones.
const (
	// LevelPublic routes never check a token.
	LevelPublic Level = iota
	// LevelReadOnly routes accept the read-only, read-write and admin roles.
	LevelReadOnly
	// LevelReadWrite routes accept the read-write and admin roles.
	LevelReadWrite
	// LevelAdmin routes accept only the admin role.
	LevelAdmin
)

// String names the level as the API reference does, for logs.
func (l Level) String() string {
	switch l {
	case LevelPublic:
		return "public"
	case LevelReadOnly:
		return "read-only"
	case LevelReadWrite:
		return "read-write"
	case LevelAdmin:
		return "admin"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// Router is a small method-and-path router with exactly the API reference's path
// semantics (docs/api/README.md §2.1). http.ServeMux is not used because it cleans and
// redirects paths, decodes %2F before splitting and has its own precedence
// rules, all of which differ from what the Queen clients expect.
//
// Routes must be registered before the router starts serving.
type Router struct {
	root  *routeNode
	mws   []func(http.Handler) http.Handler
	chain http.Handler
	// admission refuses requests from foreign origins and hosts before routing; nil admits
	// every request (admission.go).
	admission *admission
}

// routeNode is one path segment of the routing tree.
type routeNode struct {
	static map[string]*routeNode
	param  *routeNode             // the child for a ":name" segment, whatever its name
	routes map[string]*routeEntry // by method; non-empty only where a pattern ends
	allow  string                 // Allow header for the 405 answer, kept in step with routes
}

// routeEntry is one registered method+pattern. Parameter names live here rather than
// on the tree so that two patterns may name the same position differently.
type routeEntry struct {
	pattern    string
	level      Level
	paramNames []string
	h          http.HandlerFunc
}

// routeMatch is what the router hands to the handler through the context.
type routeMatch struct {
	route  *routeEntry
	values []string
}

type matchKey struct{}

// NewRouter returns an empty router; every unregistered path answers 404.
func NewRouter() *Router {
	r := &Router{root: &routeNode{}}
	r.chain = http.HandlerFunc(dispatch)
	return r
}

// Handle registers h for method and pattern. Pattern segments starting with ':'
// are parameters matching one non-empty segment; any other segment matches
// only itself, and wins over a parameter at the same position.
//
// It panics on a malformed or duplicate registration, since that is a
// programming error that should stop the broker at startup.
func (r *Router) Handle(method, pattern string, level Level, h http.HandlerFunc) {
	if method == "" || h == nil {
		panic("httpapi: Handle needs a method and a handler")
	}
	if method == http.MethodOptions {
		panic("httpapi: OPTIONS is answered by the router itself (docs/api/README.md §2.7)")
	}
	if !strings.HasPrefix(pattern, "/") {
		panic(fmt.Sprintf("httpapi: pattern %q must start with /", pattern))
	}
	rt := &routeEntry{pattern: pattern, level: level, h: h}
	n := r.root
	for _, seg := range strings.Split(pattern[1:], "/") {
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			if name == "" || slices.Contains(rt.paramNames, name) {
				panic(fmt.Sprintf("httpapi: pattern %q: empty or repeated parameter name", pattern))
			}
			rt.paramNames = append(rt.paramNames, name)
			if n.param == nil {
				n.param = &routeNode{}
			}
			n = n.param
			continue
		}
		if n.static == nil {
			n.static = make(map[string]*routeNode)
		}
		child := n.static[seg]
		if child == nil {
			child = &routeNode{}
			n.static[seg] = child
		}
		n = child
	}
	n.add(method, rt)
	// HEAD is answered like GET without a body on every safe GET (RFC 9110 §9.3.2), so load
	// balancers and uptime probes that check with HEAD /health work. Read-write GETs are pops,
	// which lease messages; HEAD must be safe, so they keep answering 405.
	if method == http.MethodGet && level != LevelReadWrite && n.routes[http.MethodHead] == nil {
		head := *rt
		head.h = headOnly(h)
		n.add(http.MethodHead, &head)
	}
}

// add registers rt under method at n and recomputes the Allow header of n's 405 answer.
func (n *routeNode) add(method string, rt *routeEntry) {
	if n.routes == nil {
		n.routes = make(map[string]*routeEntry)
	}
	if old, dup := n.routes[method]; dup {
		panic(fmt.Sprintf("httpapi: %s %s conflicts with %s %s", method, rt.pattern, method, old.pattern))
	}
	n.routes[method] = rt
	methods := make([]string, 0, len(n.routes)+1)
	for m := range n.routes {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	// OPTIONS is listed because the router answers it on every path.
	n.allow = strings.Join(append(methods, http.MethodOptions), ", ")
}

// Use adds middleware around every matched route handler, outermost first.
// Middleware runs after routing, so it can call RouteLevel and PathParam, and
// before the handler reads the body, which is where authentication belongs
// (docs/api/README.md §2.8). It does not wrap OPTIONS, 404 or 405 answers.
func (r *Router) Use(mw ...func(http.Handler) http.Handler) {
	r.mws = append(r.mws, mw...)
	var h http.Handler = http.HandlerFunc(dispatch)
	for i := len(r.mws) - 1; i >= 0; i-- {
		h = r.mws[i](h)
	}
	r.chain = h
}

// dispatch ends the middleware chain by calling the handler chosen in ServeHTTP. The
// path and query rules of docs/api/README.md §2.9 run here: after routing and authentication, before
// the route's own checks, on every route.
func dispatch(w http.ResponseWriter, req *http.Request) {
	m := req.Context().Value(matchKey{}).(*routeMatch)
	if msg := checkRequestText(req, m); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	m.route.h(w, req)
}

// ServeHTTP routes req. Admission runs first: a request from a foreign origin or naming a
// foreign host is refused before any work, and the CORS headers go on before anything else so
// that every answer, including 404, 405 and a recovered panic, carries them
// (docs/api/README.md §2.7).
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !r.admission.admit(w, req) {
		return
	}
	if req.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	segs, ok := splitPath(req.URL.EscapedPath())
	if !ok {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	n, values := r.root.match(segs, make([]string, 0, 4))
	if n == nil {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	// The path alone decides the route; a wrong method is a 405 even when a
	// parameter route would accept it, so /consumer-groups/lagging is never
	// taken as a group named "lagging".
	rt := n.routes[req.Method]
	if rt == nil {
		w.Header().Set("Allow", n.allow)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	ctx := context.WithValue(req.Context(), matchKey{}, &routeMatch{route: rt, values: values})
	recoverPanics(r.chain, w, req.WithContext(ctx))
}

// splitPath splits the raw path before decoding, so that an encoded slash
// stays inside its segment instead of creating a new one.
func splitPath(raw string) ([]string, bool) {
	if !strings.HasPrefix(raw, "/") {
		return nil, false
	}
	segs := strings.Split(raw[1:], "/")
	for i, s := range segs {
		if !strings.Contains(s, "%") {
			continue
		}
		d, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		segs[i] = d
	}
	return segs, true
}

// match walks the tree preferring static children, and backtracks to the
// parameter child only when the static branch cannot complete the path.
func (n *routeNode) match(segs, values []string) (*routeNode, []string) {
	if len(segs) == 0 {
		if len(n.routes) > 0 {
			return n, values
		}
		return nil, nil
	}
	seg, rest := segs[0], segs[1:]
	if child := n.static[seg]; child != nil {
		if m, v := child.match(rest, values); m != nil {
			return m, v
		}
	}
	// An empty segment never fills a parameter, so "/pop/queue/" stays unknown.
	if n.param != nil && seg != "" {
		return n.param.match(rest, append(values, seg))
	}
	return nil, nil
}

// PathParam returns the percent-decoded value of the named path parameter of
// the matched route, or "" when there is no such parameter.
func PathParam(req *http.Request, name string) string {
	m, _ := req.Context().Value(matchKey{}).(*routeMatch)
	if m == nil {
		return ""
	}
	for i, n := range m.route.paramNames {
		if n == name && i < len(m.values) {
			return m.values[i]
		}
	}
	return ""
}

// RouteLevel returns the access level of the matched route. A request that did
// not come through a matched route reports LevelAdmin, so that a misplaced
// authentication check fails closed rather than open.
func RouteLevel(req *http.Request) Level {
	if m, _ := req.Context().Value(matchKey{}).(*routeMatch); m != nil {
		return m.route.level
	}
	return LevelAdmin
}

// Route is one registered route: its method, its pattern and its access level.
type Route struct {
	Method, Pattern string
	Level           Level
}

// RouteIndex lists every route the API registers (HEAD twins and the dashboard's files left
// out), for tests that must cover each one: a route added without its case fails them.
func RouteIndex() []Route {
	r := NewRouter()
	(&Server{}).register(r)
	var out []Route
	var walk func(n *routeNode)
	walk = func(n *routeNode) {
		for m, rt := range n.routes {
			if m != http.MethodHead {
				out = append(out, Route{m, rt.pattern, rt.level})
			}
		}
		for _, c := range n.static {
			walk(c)
		}
		if n.param != nil {
			walk(n.param)
		}
	}
	walk(r.root)
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Pattern+" "+a.Method, b.Pattern+" "+b.Method) })
	return out
}
