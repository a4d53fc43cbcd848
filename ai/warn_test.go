package ai_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
)

var (
	warnUnit    = engine.NewUnit("warn")
	warnOpen    = engine.Define[ApTransferIn, ApTransferOut](warnUnit, "open", engine.Public())
	warnGuarded = engine.Define[ApTransferIn, ApTransferOut](warnUnit, "guarded", engine.Public())
)

// Building an app warns about every tool that needs approval and that anyone may decide,
// unless the app says it means it.
func TestInstallWarnsAboutApprovalsAnyoneMayDecide(t *testing.T) {
	t.Parallel()
	tool := func(_ *engine.Fx, in ApTransferIn) (ApTransferOut, error) { return ApTransferOut{OK: true}, nil }
	needs := ai.Approval(func(in ApTransferIn) bool { return in.Amount > 100 })
	build := func(opts ai.Options) string {
		var logs bytes.Buffer
		_, err := engine.New(engine.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), ai.Install(opts),
			engine.Bind(warnOpen, tool, needs),
			engine.Bind(warnGuarded, tool, needs, engine.Use(apDenyMallory)))
		if err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	logs := build(ai.Options{})
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "tool=warn.open") {
		t.Fatalf("no warning about the public, ungated approval tool:\n%s", logs)
	}
	if strings.Contains(logs, "warn.guarded") {
		t.Fatalf("a gated approval tool was warned about:\n%s", logs)
	}
	if logs := build(ai.Options{PublicApprovals: true}); logs != "" {
		t.Fatalf("PublicApprovals still warns:\n%s", logs)
	}
}
