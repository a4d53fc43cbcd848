package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// router matches REST triggers. It is ours rather than http.ServeMux because the protocol
// needs envelope answers for unknown routes and wrong methods, which ServeMux writes as
// plain text; matched path values are still set with r.SetPathValue so handlers and
// middleware read them the standard way.
type router struct {
	static  map[string]map[string]*routeTarget // path → method → target
	dynamic []*dynRoute
}

type routeTarget struct {
	binding *binding // a flow, or
	extra   http.Handler
	params  []string
}

type dynRoute struct {
	segs    []string // literal segments, or ":name"
	methods map[string]*routeTarget
}

func newRouter(a *App) (*router, error) {
	r := &router{static: map[string]map[string]*routeTarget{}}
	for _, b := range a.order {
		b.call = a.chain(b)
		if b.def.route == nil || b.serverOnly {
			continue
		}
		if err := r.add(b.def.route.Method, b.def.route.Path, &routeTarget{binding: b, params: b.def.params}); err != nil {
			return nil, fmt.Errorf("engine: flow %s: %w", b.def.ID(), err)
		}
	}
	for _, e := range a.extraRoutes {
		if err := r.add(e.route.Method, e.route.Path, &routeTarget{extra: e.h, params: e.params}); err != nil {
			return nil, fmt.Errorf("engine: route %s %s: %w", e.route.Method, e.route.Path, err)
		}
	}
	// Literal segments win over parameters, position by position.
	sort.SliceStable(r.dynamic, func(i, j int) bool {
		a, b := r.dynamic[i].segs, r.dynamic[j].segs
		for k := 0; k < len(a) && k < len(b); k++ {
			pa, pb := strings.HasPrefix(a[k], ":"), strings.HasPrefix(b[k], ":")
			if pa != pb {
				return !pa
			}
		}
		return len(a) < len(b)
	})
	return r, nil
}

func (r *router) add(method, path string, t *routeTarget) error {
	if len(t.params) == 0 {
		m := r.static[path]
		if m == nil {
			m = map[string]*routeTarget{}
			r.static[path] = m
		}
		if _, dup := m[method]; dup {
			return fmt.Errorf("%s %s is already routed", method, path)
		}
		m[method] = t
		return nil
	}
	segs := strings.Split(path[1:], "/")
	shape := shapeOf(segs)
	for _, d := range r.dynamic {
		if shapeOf(d.segs) == shape {
			if _, dup := d.methods[method]; dup {
				return fmt.Errorf("%s %s conflicts with an existing route", method, path)
			}
			if !sameParams(d.segs, segs) {
				return fmt.Errorf("%s %s names its parameters differently from a route of the same shape", method, path)
			}
			d.methods[method] = t
			return nil
		}
	}
	r.dynamic = append(r.dynamic, &dynRoute{segs: segs, methods: map[string]*routeTarget{method: t}})
	return nil
}

func shapeOf(segs []string) string {
	var sb strings.Builder
	for _, s := range segs {
		sb.WriteByte('/')
		if strings.HasPrefix(s, ":") {
			sb.WriteByte(':')
		} else {
			sb.WriteString(s)
		}
	}
	return sb.String()
}

func sameParams(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// match finds the target for a request, appending the values of its parameters to vals.
// found reports whether the path exists for some method; allow lists those methods when
// the request's method does not match.
func (r *router) match(method, escapedPath string, vals []string) (t *routeTarget, values []string, found bool, allow []string) {
	path, err := url.PathUnescape(escapedPath)
	if err != nil {
		return nil, nil, false, nil
	}
	if m, ok := r.static[path]; ok {
		if t := pick(m, method); t != nil {
			return t, nil, true, nil
		}
		return nil, nil, true, methodsOf(m)
	}
	if len(escapedPath) < 2 || escapedPath[0] != '/' {
		return nil, nil, false, nil
	}
	rest := escapedPath[1:]
	n := strings.Count(rest, "/") + 1
	for _, d := range r.dynamic {
		if len(d.segs) != n {
			continue
		}
		got, ok := matchSegs(d.segs, rest, vals)
		if !ok {
			continue
		}
		if t := pick(d.methods, method); t != nil {
			return t, got, true, nil
		}
		allow = append(allow, methodsOf(d.methods)...)
		found = true
	}
	return nil, nil, found, allow
}

// matchSegs matches path, the escaped path after its first slash, with the pattern's
// segments, appending the parameters' values to vals.
func matchSegs(pattern []string, path string, vals []string) ([]string, bool) {
	for _, p := range pattern {
		seg, after, _ := strings.Cut(path, "/")
		path = after
		if strings.HasPrefix(p, ":") {
			v, err := url.PathUnescape(seg)
			if err != nil || v == "" {
				return nil, false
			}
			vals = append(vals, v)
			continue
		}
		if p != seg {
			return nil, false
		}
	}
	return vals, true
}

func pick(m map[string]*routeTarget, method string) *routeTarget {
	if t, ok := m[method]; ok {
		return t
	}
	if method == http.MethodHead {
		return m[http.MethodGet]
	}
	return nil
}

func methodsOf(m map[string]*routeTarget) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
