package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles the main package pkg (as go build takes it, from the working
// directory) into tb's temporary directory and returns the binary's path.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(tb.TempDir(), filepath.Base(abs))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// ProcessOptions configure [Start].
type ProcessOptions struct {
	// Name is the process's ENGINE_INSTANCE, and in messages "instance <Name>"; when
	// empty, no ENGINE_INSTANCE is set and messages say "the app".
	Name string
	// Env is added to the environment of this process, before ENGINE_ADDR.
	Env []string
	// Log, when set, receives the process's stderr too.
	Log io.Writer
	// Ready is how long the process has to say it listens. Default 60s.
	Ready time.Duration
}

// Process is a running process started by [Start]. It is ended only through its own
// [exec.Cmd], that is by its pid: never by name.
type Process struct {
	// URL is the base URL the process said it listens on.
	URL string

	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *tailBuffer

	mu    sync.Mutex
	ended bool
}

// Start runs bin with the environment of this process, opts.Env and
// ENGINE_ADDR=127.0.0.1:0, so the kernel picks a free port, and waits until it prints
// "listening on <url>" (as examples/conformance does). A process that exits first, or
// does not listen within opts.Ready, is an error with the tail of its stderr; on an
// error no process is left running.
func Start(bin string, opts ProcessOptions) (*Process, error) {
	if opts.Ready <= 0 {
		opts.Ready = 60 * time.Second
	}
	p := &Process{name: "the app", exited: make(chan struct{}), stderr: &tailBuffer{max: 64 << 10}}
	if opts.Name != "" {
		p.name = "instance " + opts.Name
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), opts.Env...), "ENGINE_ADDR=127.0.0.1:0")
	if opts.Name != "" {
		cmd.Env = append(cmd.Env, "ENGINE_INSTANCE="+opts.Name)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = p.stderr
	if opts.Log != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, opts.Log)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait() // copies the rest of stderr first
		close(p.exited)
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case ready <- u:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.URL = <-ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before it listened:\n%s", p.name, p.stderr.String())
	case <-time.After(opts.Ready):
		_ = cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("%s did not listen within %s:\n%s", p.name, opts.Ready, p.stderr.String())
	}
}

// StartProcess is [Start] for a test: it fails tb when the process does not start, stops
// it at cleanup (SIGTERM, then SIGKILL after 10s) and logs its stderr when tb failed.
func StartProcess(tb testing.TB, bin string, opts ProcessOptions) *Process {
	tb.Helper()
	p, err := Start(bin, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Stop(10 * time.Second)
		if tb.Failed() {
			tb.Logf("%s stderr:\n%s", p.name, p.Stderr())
		}
	})
	return p
}

// Kill ends the process with SIGKILL and waits for it; it does nothing when the process
// was already ended through p.
func (p *Process) Kill() error { return p.end(syscall.SIGKILL, 0) }

// Stop asks the process to shut down (SIGTERM) and kills it after grace.
func (p *Process) Stop(grace time.Duration) { _ = p.end(syscall.SIGTERM, grace) }

func (p *Process) end(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	ended := p.ended
	p.ended = true
	p.mu.Unlock()
	if ended {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		select {
		case <-p.exited: // it had exited by itself
			return nil
		default:
			return fmt.Errorf("signal %s to %s: %w", sig, p.name, err)
		}
	}
	if grace > 0 {
		select {
		case <-p.exited:
			return nil
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
		}
	}
	<-p.exited
	return nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited and its stderr is copied.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stderr returns the last 64 KiB the process wrote to stderr.
func (p *Process) Stderr() string { return p.stderr.String() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
