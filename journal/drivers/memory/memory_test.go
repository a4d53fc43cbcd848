package memory_test

import (
	"testing"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/journaltest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(*testing.T) journal.Driver { return memory.New() })
}
