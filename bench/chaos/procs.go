package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// instance is one process of the reference app, started and ended by the harness only
// (by its pid), always on 127.0.0.1.
type instance struct {
	name    string
	bin     string
	env     []string
	logFile string // file the process's stderr is appended to, across restarts

	mu     sync.Mutex
	cmd    *exec.Cmd
	url    string
	alive  bool
	exited chan struct{}
	stderr *tailBuffer
}

// start runs the process and waits until it says it listens.
func (in *instance) start() error {
	cmd := exec.Command(in.bin)
	cmd.Env = append(append(os.Environ(), in.env...), "ENGINE_ADDR=127.0.0.1:0", "ENGINE_INSTANCE="+in.name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	var logFile *os.File
	if in.logFile != "" {
		f, err := os.OpenFile(in.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "---- %s starts at %s\n", in.name, time.Now().Format(time.RFC3339Nano))
		cmd.Stderr, logFile = io.MultiWriter(stderr, f), f
	}
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // copies the rest of stderr first
		if logFile != nil {
			_ = logFile.Close()
		}
		close(exited)
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
	case u := <-ready:
		in.mu.Lock()
		in.cmd, in.url, in.alive, in.exited, in.stderr = cmd, u, true, exited, stderr
		in.mu.Unlock()
		return nil
	case <-exited:
		return fmt.Errorf("instance %s exited before it listened:\n%s", in.name, stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("instance %s did not listen within 60s:\n%s", in.name, stderr.String())
	}
}

// kill ends the process with SIGKILL and waits for it.
func (in *instance) kill() { in.end(syscall.SIGKILL, 0) }

// stop asks the process to shut down (SIGTERM), killing it after grace.
func (in *instance) stop(grace time.Duration) { in.end(syscall.SIGTERM, grace) }

func (in *instance) end(sig syscall.Signal, grace time.Duration) {
	in.mu.Lock()
	cmd, exited, alive := in.cmd, in.exited, in.alive
	in.alive = false
	in.mu.Unlock()
	if cmd == nil || !alive {
		return
	}
	_ = cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-exited:
			return
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-exited
}

// base returns the instance's URL and whether it is running.
func (in *instance) base() (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.url, in.alive
}

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
