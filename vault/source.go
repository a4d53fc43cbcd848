package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Source looks secrets up by name. Lookup returns ok false, with no error, when the source
// does not hold the name, so a [Chain] can fall through to the next source; an error means
// the source is holding the name but could not read it.
type Source interface {
	Lookup(ctx context.Context, name string) (value Secret, ok bool, err error)
}

// validName keeps names portable across sources: environment variables and file names.
var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

func checkName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("vault: bad secret name %q", name)
	}
	return nil
}

// Env reads secret NAME from the environment variable prefix+NAME (for example
// Env("APP_") serves "JWT_KEY" from APP_JWT_KEY). An empty variable counts as absent.
func Env(prefix string) Source { return envSource{prefix: prefix} }

type envSource struct{ prefix string }

func (e envSource) Lookup(_ context.Context, name string) (Secret, bool, error) {
	if err := checkName(name); err != nil {
		return Secret{}, false, err
	}
	v, ok := os.LookupEnv(e.prefix + name)
	if !ok || v == "" {
		return Secret{}, false, nil
	}
	return Secret{v: v}, true, nil
}

// Files reads secret NAME from the file dir/NAME, trailing newlines trimmed: the layout
// of Kubernetes and Docker secret mounts. Names cannot escape dir.
func Files(dir string) Source { return fileSource{dir: dir} }

type fileSource struct{ dir string }

func (f fileSource) Lookup(_ context.Context, name string) (Secret, bool, error) {
	if err := checkName(name); err != nil {
		return Secret{}, false, err
	}
	if strings.Contains(name, "..") {
		return Secret{}, false, fmt.Errorf("vault: bad secret name %q", name)
	}
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return Secret{}, false, nil
	}
	if err != nil {
		// The path is ours, not the secret; it is safe to report.
		return Secret{}, false, fmt.Errorf("vault: reading secret %s: %w", name, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return Secret{}, false, nil
	}
	return Secret{v: v}, true, nil
}

// Map is a fixed set of secrets, for tests and for values computed at start.
type Map map[string]string

// Lookup implements [Source].
func (m Map) Lookup(_ context.Context, name string) (Secret, bool, error) {
	v, ok := m[name]
	if !ok || v == "" {
		return Secret{}, false, nil
	}
	return Secret{v: v}, true, nil
}

// Chain looks a name up in each source in turn and returns the first hit, so a deployment
// can layer files over environment variables over defaults.
func Chain(sources ...Source) Source { return chain(sources) }

type chain []Source

func (c chain) Lookup(ctx context.Context, name string) (Secret, bool, error) {
	for _, s := range c {
		if s == nil {
			continue
		}
		v, ok, err := s.Lookup(ctx, name)
		if err != nil || ok {
			return v, ok, err
		}
	}
	return Secret{}, false, nil
}
