package testenv_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"
)

// script writes an executable shell script into a temporary directory.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartWaitsUntilListeningAndKillsByPid(t *testing.T) {
	bin := script(t, `echo starting; echo "listening on http://$ENGINE_ADDR/$ENGINE_INSTANCE/$FOO"; exec sleep 60`)
	p, err := testenv.Start(bin, testenv.ProcessOptions{Name: "a", Env: []string{"FOO=bar"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://127.0.0.1:0/a/bar"; p.URL != want {
		t.Errorf("URL = %q, want %q", p.URL, want)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Kill returned before the process exited")
	}
	if err := p.Kill(); err != nil {
		t.Errorf("a second Kill: %v", err)
	}
}

func TestStartReportsAProcessThatExitsFirst(t *testing.T) {
	_, err := testenv.Start(script(t, `echo "no database" >&2; exit 3`), testenv.ProcessOptions{})
	if err == nil || !strings.Contains(err.Error(), "the app exited before it listened") || !strings.Contains(err.Error(), "no database") {
		t.Fatalf("err = %v, want the early exit with the stderr", err)
	}
}

func TestStartGivesUpAfterReady(t *testing.T) {
	_, err := testenv.Start(script(t, `exec sleep 60`), testenv.ProcessOptions{Name: "slow", Ready: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "instance slow did not listen within 200ms") {
		t.Fatalf("err = %v, want the timeout", err)
	}
}

func TestStopEndsTheProcessWithSIGTERM(t *testing.T) {
	p, err := testenv.Start(script(t, `trap 'echo bye >&2; exit 0' TERM; echo "listening on x"; while :; do sleep 0.05; done`), testenv.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(10 * time.Second)
	if !strings.Contains(p.Stderr(), "bye") {
		t.Fatalf("stderr %q: the process did not get SIGTERM first", p.Stderr())
	}
}
