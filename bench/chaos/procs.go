package chaos

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"
)

// instance is one process of the reference app, started and ended by the harness only
// (by its pid, through [testenv.Process]), always on 127.0.0.1.
type instance struct {
	name    string
	bin     string
	env     []string
	logFile string // file the process's stderr is appended to, across restarts

	mu    sync.Mutex
	proc  *testenv.Process
	alive bool
}

// start runs the process and waits until it says it listens.
func (in *instance) start() error {
	opts := testenv.ProcessOptions{Name: in.name, Env: in.env}
	var logFile *os.File
	if in.logFile != "" {
		f, err := os.OpenFile(in.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "---- %s starts at %s\n", in.name, time.Now().Format(time.RFC3339Nano))
		opts.Log, logFile = f, f
	}
	p, err := testenv.Start(in.bin, opts)
	if err != nil {
		if logFile != nil {
			_ = logFile.Close() // Start returns once a failed process exited
		}
		return err
	}
	if logFile != nil {
		go func() {
			<-p.Exited()
			_ = logFile.Close()
		}()
	}
	in.mu.Lock()
	in.proc, in.alive = p, true
	in.mu.Unlock()
	return nil
}

// kill ends the process with SIGKILL and waits for it.
func (in *instance) kill() {
	if p := in.end(); p != nil {
		_ = p.Kill()
	}
}

// stop asks the process to shut down (SIGTERM), killing it after grace.
func (in *instance) stop(grace time.Duration) {
	if p := in.end(); p != nil {
		p.Stop(grace)
	}
}

// end marks the instance down and returns its process if it was running.
func (in *instance) end() *testenv.Process {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.alive {
		return nil
	}
	in.alive = false
	return in.proc
}

// base returns the instance's URL and whether it is running.
func (in *instance) base() (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc == nil {
		return "", false
	}
	return in.proc.URL, in.alive
}
