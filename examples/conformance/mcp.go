package main

import (
	"context"
	"os"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	"github.com/bbc28f59/engine/mcp"
)

// The MCP part (ENGINE_MCP=1): the math flows and notes.list/get as tools, the caller's
// notes as resources, at /_engine/mcp. ENGINE_MCP_ALLOWED_HOSTS (comma-separated) adds
// host names the endpoint accepts on a loopback address.
func init() {
	register("mcp", func(context.Context, *env) (engine.Option, error) {
		if os.Getenv("ENGINE_MCP") != "1" {
			return engine.Options(), nil
		}
		var hosts []string
		for _, h := range strings.Split(os.Getenv("ENGINE_MCP_ALLOWED_HOSTS"), ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
		return mcp.Serve(mcp.Options{
			Name:         "engine-conformance",
			Tools:        []mcp.Selector{mcp.Units(contract.Math), mcp.Flows(Notes.List, Notes.Get)},
			Resources:    []mcp.Resource{{Name: "notes", Description: "The caller's notes.", List: Notes.List, Get: Notes.Get, TitleField: "title"}},
			AllowedHosts: hosts,
		}), nil
	})
}
