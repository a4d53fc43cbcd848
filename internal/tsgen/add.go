package tsgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DescriptorPath is where an app serves its descriptor.
const DescriptorPath = "/_engine/client.json"

// Files are the names [Add] writes.
const (
	DTSFile = "engine-client.d.ts"
	JSFile  = "engine-client.js"
)

// ErrUntranslatable is returned by [Add] after it wrote the files when some schema had
// no TypeScript translation; those places say unknown, and the problems were reported.
var ErrUntranslatable = errors.New("some schemas have no TypeScript translation (typed unknown)")

// DescriptorURL is the descriptor's address for an app's base URL; a URL that already
// names the descriptor is kept.
func DescriptorURL(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, DescriptorPath) {
		return base
	}
	return base + DescriptorPath
}

// Fetch reads the descriptor of the app at base.
func Fetch(ctx context.Context, client *http.Client, base string) (*Descriptor, error) {
	u := DescriptorURL(base)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("bad URL %q: %v", base, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %v (is the app running?)", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered HTTP %d, not a descriptor (is this the base URL of an engine app?)", u, resp.StatusCode)
	}
	d, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return d, nil
}

// Add fetches the descriptor of the app at base and writes the declarations and the
// route module into dir. Untranslatable schemas are reported to warn, one line each,
// and make it return [ErrUntranslatable] after writing.
func Add(ctx context.Context, client *http.Client, base, dir string, warn io.Writer) error {
	d, err := Fetch(ctx, client, base)
	if err != nil {
		return err
	}
	out := Generate(d, DescriptorURL(base))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeBoth(dir, map[string][]byte{DTSFile: out.DTS, JSFile: out.JS}); err != nil {
		return err
	}
	for _, p := range out.Problems {
		fmt.Fprintf(warn, "engine: %s\n", p)
	}
	if len(out.Problems) > 0 {
		return fmt.Errorf("%d problem(s) in %s: %w", len(out.Problems), filepath.Join(dir, DTSFile), ErrUntranslatable)
	}
	return nil
}

// writeBoth writes the files into dir so that a failure leaves the old ones as they
// were: each goes to a temporary file in dir first, and only when every write has
// succeeded (and no target is a directory, which a rename cannot replace)
// are they renamed over the targets. The temporary files are removed on failure.
func writeBoth(dir string, files map[string][]byte) (err error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	tmps := map[string]string{}
	defer func() {
		if err != nil {
			for _, tmp := range tmps {
				_ = os.Remove(tmp)
			}
		}
	}()
	for _, name := range names {
		f, err := os.CreateTemp(dir, "."+name+".*.tmp")
		if err != nil {
			return err
		}
		tmps[name] = f.Name()
		_, err = f.Write(files[name])
		if err == nil {
			err = f.Chmod(0o644)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
	}
	for _, name := range names {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err == nil && fi.IsDir() {
			return fmt.Errorf("cannot replace %s: it is a directory", filepath.Join(dir, name))
		}
	}
	for _, name := range names {
		if err := os.Rename(tmps[name], filepath.Join(dir, name)); err != nil {
			return err
		}
		delete(tmps, name)
	}
	return nil
}
