package callkey

import (
	"context"
	"testing"
)

func TestKeysArePathsThatNeverCollide(t *testing.T) {
	seen := map[string]string{}
	add := func(what, key string) {
		t.Helper()
		if prev, ok := seen[key]; ok {
			t.Fatalf("%s and %s share key %q", prev, what, key)
		}
		seen[key] = what
	}
	run := ForRun("R")
	add("run R", "R")
	add("R's first call outside steps", run.Next())
	add("R's second call outside steps", run.Next())
	for pos := range 3 {
		step := ForStep("R", pos)
		first := step.Next()
		if first != step.Key() {
			t.Fatalf("a step's first call has key %q, want the step's %q", first, step.Key())
		}
		add("step and first call "+step.Key(), first)
		add("second call of "+step.Key(), step.Next())
		// The first call is a durable sub-run with the step's key: its own steps and
		// calls must not meet the parent step's later calls.
		child := ForRun(first)
		add("child call outside steps", child.Next())
		add("child call outside steps", child.Next())
		for cpos := range 3 {
			cs := ForStep(first, cpos)
			add("child step "+cs.Key(), cs.Next())
			add("child step's second call", cs.Next())
		}
	}
}

func TestScopeTravelsInTheContext(t *testing.T) {
	if From(context.Background()) != nil {
		t.Fatal("a bare context has a scope")
	}
	s := ForStep("R", 2)
	if got := From(With(context.Background(), s)); got != s {
		t.Fatalf("From(With(s)) = %v", got)
	}
	if s.Key() != "R-2" {
		t.Fatalf("step key %q, want R-2", s.Key())
	}
}

func TestOnlyACallScopeIsTakenAsARunAndOnlyOnce(t *testing.T) {
	for name, s := range map[string]*Scope{"run": ForRun("R"), "step": ForStep("R", 1)} {
		if s.TakeAsRun() {
			t.Fatalf("a %s scope was taken as a run id", name)
		}
	}
	c := ForCall("R-1")
	if !c.TakeAsRun() || c.TakeAsRun() {
		t.Fatal("a call scope must be taken as a run id exactly once")
	}
	if c.Next() != "R-1-r1" {
		t.Fatal("a call scope numbers the calls made outside steps like a run does")
	}
}
