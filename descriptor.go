package engine

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/bbc28f59/engine/internal/tsgen"
	"github.com/google/jsonschema-go/jsonschema"
)

// Descriptor is the body of GET /_engine/client.json: every bound flow with its trigger,
// JSON Schemas, declared errors and flags, grouped by unit. Tools generate typed clients
// from it; it never carries secrets or server-side configuration.
type Descriptor struct {
	Version int              `json:"version"`
	RPC     string           `json:"rpc"`
	Units   []DescriptorUnit `json:"units"`
	// Server lists the flows bound with [ServerOnly]: information for operators, never
	// routes a client can call.
	Server []DescriptorServerFlow `json:"server,omitempty"`
}

// DescriptorServerFlow is a flow only server code runs, in the [Descriptor].
type DescriptorServerFlow struct {
	ID          string         `json:"id"`
	Description string         `json:"description,omitempty"`
	Tags        map[string]any `json:"tags,omitempty"`
}

// DescriptorUnit is a unit in the [Descriptor].
type DescriptorUnit struct {
	Name  string           `json:"name"`
	Flows []DescriptorFlow `json:"flows"`
}

// DescriptorFlow is a flow in the [Descriptor].
type DescriptorFlow struct {
	Name        string             `json:"name"`
	ID          string             `json:"id"`
	Description string             `json:"description,omitempty"`
	RPC         string             `json:"rpc"`
	Trigger     *Route             `json:"trigger"`
	Public      bool               `json:"public"`
	Gated       bool               `json:"gated"`
	Durable     bool               `json:"durable"`
	Input       *jsonschema.Schema `json:"input"`
	Output      *jsonschema.Schema `json:"output"`
	// Stream marks a streaming flow ([DefineStream]): Output describes its event stream,
	// Events the JSON of each event, Result what its handler returns.
	Stream bool                       `json:"stream,omitempty"`
	Events *jsonschema.Schema         `json:"events,omitempty"`
	Result *jsonschema.Schema         `json:"result,omitempty"`
	Errors map[string]DescriptorError `json:"errors"`
	Tags   map[string]any             `json:"tags,omitempty"`
}

// DescriptorError is a declared error code in the [Descriptor].
type DescriptorError struct {
	Status int                `json:"status"`
	Data   *jsonschema.Schema `json:"data"`
}

// Descriptor returns the app's descriptor.
func (a *App) Descriptor() Descriptor {
	d := Descriptor{Version: 1, RPC: RPCPrefix + "{unit}/{flow}", Units: []DescriptorUnit{}}
	byUnit := map[string]int{}
	for _, def := range a.Flows() {
		b := a.bindings[def.ID()]
		if b.serverOnly {
			d.Server = append(d.Server, DescriptorServerFlow{ID: def.ID(), Description: def.descr, Tags: b.tags})
			continue
		}
		i, ok := byUnit[def.unit]
		if !ok {
			i = len(d.Units)
			byUnit[def.unit] = i
			d.Units = append(d.Units, DescriptorUnit{Name: def.unit})
		}
		f := DescriptorFlow{
			Name: def.name, ID: def.ID(), Description: def.descr,
			RPC:     RPCPrefix + def.unit + "/" + def.name,
			Trigger: def.route, Public: def.public, Gated: !def.public || b.tags["gate"] != nil, Durable: def.durable,
			Input: def.inSchema, Output: def.outSchema, Stream: def.stream,
			Errors: map[string]DescriptorError{}, Tags: b.tags,
		}
		if def.stream {
			f.Events, f.Result = def.evSchema, def.resultSchema
		}
		for _, e := range def.errors {
			s, err := schemaFor(e.DataType())
			if err != nil {
				s = &jsonschema.Schema{}
			}
			f.Errors[e.Code()] = DescriptorError{Status: e.Status(), Data: s}
		}
		d.Units[i].Flows = append(d.Units[i].Flows, f)
	}
	return d
}

// descriptorJSON returns the body of /_engine/client.json, encoded once; nil when it
// cannot be encoded (logged).
func (a *App) descriptorJSON() []byte {
	a.descOnce.Do(func() {
		body, err := json.MarshalIndent(a.Descriptor(), "", "  ")
		if err != nil {
			a.logger.Error("engine: encoding descriptor", "err", err)
			return
		}
		a.descriptor = append(body, '\n')
	})
	return a.descriptor
}

func (a *App) serveDescriptor(w http.ResponseWriter, r *http.Request) {
	if a.descriptorJSON() == nil {
		a.writeError(w, r, nil, internalError())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(a.descriptor)
}

// tsFiles are the TypeScript files the app serves, generated from its descriptor on the
// first request of either and kept: what `engine client add` writes, so a frontend gets
// its types with curl, without Go.
type tsFiles struct {
	once    sync.Once
	dts, js []byte
}

// serveTypeScript answers GET /_engine/client.d.ts (the declarations of the app's flows,
// augmenting the client package's Register) and GET /_engine/client.js (the REST route
// table they describe). The generator runs here, in the server; a client binary, which
// links no App, links none of it.
func (a *App) serveTypeScript(w http.ResponseWriter, r *http.Request, name string) {
	f := &a.tsFiles
	f.once.Do(func() {
		body := a.descriptorJSON()
		if body == nil {
			return
		}
		d, err := tsgen.Parse(body)
		if err != nil {
			a.logger.Error("engine: reading the descriptor for the TypeScript files", "err", err)
			return
		}
		out := tsgen.Generate(d, "this app's "+RPCPrefix+"client.json")
		for _, p := range out.Problems {
			a.logger.Warn("engine: client.d.ts: a schema has no TypeScript translation and is typed unknown", "flow", p.Flow, "where", p.Where, "problem", p.Msg)
		}
		f.dts, f.js = out.DTS, out.JS
	})
	body, ct := f.dts, "application/typescript; charset=utf-8"
	if name == "client.js" {
		body, ct = f.js, "text/javascript; charset=utf-8"
	}
	if body == nil {
		a.writeError(w, r, nil, internalError())
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}
