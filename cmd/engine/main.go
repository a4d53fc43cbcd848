// Command engine is the SDK's command-line tool.
//
//	engine client add <url> [-o dir]
//
// reads GET <url>/_engine/client.json from a running app and writes engine-client.d.ts
// (the app's flows as TypeScript types, augmenting the client package's Register) and
// engine-client.js (the REST route table) into dir, the current directory by default.
//
// From a frontend's directory, which is no Go module, run it with a version (go run
// needs one outside a module; use the version of the SDK the app is built with, or
// latest):
//
//	go run github.com/bbc28f59/engine/cmd/engine@<version> client add http://127.0.0.1:8787 -o src
//
// Without Go, fetch the same files from the app, which serves them generated from its
// descriptor:
//
//	curl -fsS http://127.0.0.1:8787/_engine/client.d.ts > src/engine-client.d.ts
//	curl -fsS http://127.0.0.1:8787/_engine/client.js > src/engine-client.js
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/bbc28f59/engine/internal/tsgen"
)

const usage = `usage: engine client add <url> [-o dir]

Reads <url>/_engine/client.json from a running app and writes engine-client.d.ts and
engine-client.js into dir (default: the current directory). The app serves the same
files at <url>/_engine/client.d.ts and <url>/_engine/client.js.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "client" || args[1] != "add" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("engine client add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", ".", "directory to write the files into")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	// The URL may come before or after -o.
	rest := args[2:]
	var url string
	if len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		url, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if url == "" && fs.NArg() == 1 {
		url = fs.Arg(0)
	} else if fs.NArg() > 0 || url == "" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := tsgen.Add(ctx, &http.Client{}, url, *dir, stderr)
	switch {
	case errors.Is(err, tsgen.ErrUntranslatable):
		fmt.Fprintf(stderr, "engine: %v\n", err)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "engine: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s and %s in %s\n", tsgen.DTSFile, tsgen.JSFile, *dir)
	return 0
}
