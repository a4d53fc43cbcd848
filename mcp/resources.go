package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource serves the records of a store resource as read-only MCP resources, at
// engine://<Name>/<id>, each read as its JSON. Listing and reading run the resource's
// list and get flows as the caller, so their gates and tenant scoping decide what each
// caller sees: a caller the list flow refuses lists nothing, and a record the get flow
// does not find for the caller (unknown, or another tenant's) is resource-not-found.
//
//	mcp.Resource{Name: "notes", List: Notes.List, Get: Notes.Get, TitleField: "title"}
type Resource struct {
	// Name is the URI's authority and the template's name ("notes").
	Name string
	// Description describes the resources to clients.
	Description string
	// List is the store resource's list flow (input {limit}, output a list of records
	// with an "id"); a listing shows its first [ListLimit] records.
	List Declared
	// Get is its get flow (input {id}).
	Get Declared
	// TitleField, when set, is the record field shown as each resource's title.
	TitleField string
}

// ListLimit is how many records of each [Resource] a resources/list shows.
const ListLimit = 100

// CodeResourceNotFound is the JSON-RPC error code of a read of an unknown resource, or
// of a record the caller may not see: -32002, as MCP's revisions up to 2025-11-25 name it
// (a later revision moved it to -32602, invalid params, which the Go SDK now sends by
// default; clients built for either read a not-found from it).
const CodeResourceNotFound = -32002

// notFound is the error of a resource read that finds nothing.
func notFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: CodeResourceNotFound, Message: "Resource not found", Data: data}
}

// CodeDenied is the JSON-RPC error code of a resource read the app refused (a gate's
// Unauthorized, Forbidden or RateLimited); its data is the envelope's error object.
const CodeDenied = -32001

func (r Resource) check() error {
	switch {
	case r.Name == "" || strings.ContainsAny(r.Name, "/:?#{} "):
		return fmt.Errorf("mcp: Resource %q: the name must be a plain word", r.Name)
	case r.List == nil || r.List.Def() == nil || r.Get == nil || r.Get.Def() == nil:
		return fmt.Errorf("mcp: Resource %s needs its list and get flows", r.Name)
	}
	return nil
}

func (r Resource) prefix() string { return "engine://" + r.Name + "/" }

// addResources registers a template per resource (reads) and the listing.
func (s *server) addResources(app *engine.App) error {
	for _, r := range s.opts.Resources {
		for _, f := range []Declared{r.List, r.Get} {
			if _, ok := app.Lookup(f.Def().ID()); !ok {
				return fmt.Errorf("mcp: Resource %s: flow %s is not bound in this app", r.Name, f.Def().ID())
			}
		}
		s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{Name: r.Name, URITemplate: r.prefix() + "{id}",
			Description: r.Description, MIMEType: "application/json"}, s.readResource(r))
	}
	if len(s.opts.Resources) > 0 {
		s.mcp.AddReceivingMiddleware(s.listResources)
	}
	return nil
}

// listResources answers resources/list with the records each resource's list flow gives
// the caller (the SDK's own listing holds only resources registered up front).
func (s *server) listResources(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "resources/list" {
			return next(ctx, method, req)
		}
		// Each caller lists what it may read: no cache may serve it to another.
		res := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}, Cacheable: sdk.Cacheable{CacheScope: "private"}}
		p := principalOf(ctx)
		for _, r := range s.opts.Resources {
			out, err := s.app.Invoke(ctx, r.List.Def().ID(), p, json.RawMessage(fmt.Sprintf(`{"limit":%d}`, ListLimit)))
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				continue // the caller may not list these: nothing to show
			}
			var records []map[string]any
			if err := json.Unmarshal(out, &records); err != nil {
				return nil, fmt.Errorf("mcp: resource %s: the list flow's output is not a list of records: %w", r.Name, err)
			}
			for _, rec := range records {
				id, _ := rec["id"].(string)
				if id == "" {
					continue
				}
				item := &sdk.Resource{URI: r.prefix() + id, Name: r.Name + "/" + id, MIMEType: "application/json"}
				if title, ok := rec[r.TitleField].(string); ok && r.TitleField != "" {
					item.Title = title
				}
				res.Resources = append(res.Resources, item)
			}
		}
		return res, nil
	}
}

// readResource reads one record through the get flow, as the caller.
func (s *server) readResource(r Resource) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := strings.CutPrefix(uri, r.prefix())
		if !ok || id == "" || strings.Contains(id, "/") {
			return nil, notFound(uri)
		}
		in, _ := json.Marshal(map[string]string{"id": id})
		out, err := s.app.Invoke(ctx, r.Get.Def().ID(), principalOf(ctx), in)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			e := engine.AsError(err)
			if e == nil || e.Code == engine.CodeNotFound {
				return nil, notFound(uri)
			}
			data, _ := json.Marshal(map[string]any{"code": e.Code, "data": e.Data})
			return nil, &jsonrpc.Error{Code: CodeDenied, Message: "denied: " + e.Code, Data: data}
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(out)}},
			Cacheable: sdk.Cacheable{CacheScope: "private"}}, nil
	}
}

// checkHost refuses a request that arrived on a loopback address but names another host
// in Host or Origin: a page on another site whose name resolves to 127.0.0.1 (DNS
// rebinding) must not reach a local server.
func (s *server) checkHost(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil || !loopback(hostOf(local.String())) {
		return nil
	}
	host := hostOf(r.Host)
	if !s.allowed(host) {
		return s.refuse("Host", host)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !s.allowed(u.Hostname()) {
			return s.refuse("Origin", o)
		}
	}
	return nil
}

func (s *server) refuse(header, value string) error {
	return engine.Forbidden("mcp", fmt.Sprintf("%s %q is not allowed: the MCP endpoint listens on a loopback address, where only localhost, 127.0.0.1 and [::1] are accepted (DNS-rebinding protection); add the host to mcp.Options.AllowedHosts", header, value))
}

func (s *server) allowed(host string) bool {
	return loopback(host) || slices.ContainsFunc(s.opts.AllowedHosts, func(h string) bool { return strings.EqualFold(h, host) })
}

// hostOf strips the port and the brackets of an IPv6 literal.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
