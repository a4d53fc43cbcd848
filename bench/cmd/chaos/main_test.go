package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFiguresWithoutARun checks that a harness that could not run prints why and no
// figures: a report of zeros would read as a clean run of no failures.
func TestNoFiguresWithoutARun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		why  string
	}{
		{"missing dir", []string{"-dir", filepath.Join(t.TempDir(), "no-such-dir")}, "no-such-dir"},
		{"unknown driver", []string{"-driver", "nosuch", "-dir", t.TempDir()}, `driver "nosuch"`},
		{"postgres without a server", []string{"-driver", "postgres", "-dsn", "", "-dir", t.TempDir()}, "PostgresDSN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if stdout.Len() != 0 {
				t.Errorf("printed figures for a run that did not happen:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.why) {
				t.Errorf("stderr does not say why (%q):\n%s", tc.why, stderr.String())
			}
		})
	}
}
