package chaos

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// The fake model behind every instance, speaking OpenAI's streaming wire format. Its
// answer depends only on the conversation it is sent, so any instance, and any
// re-execution of a model step, gets the same turn:
//
//   - first turn: a short sentence, then a call of tools.transfer (approval needed: the
//     amount is over 100), preceded by a call of tools.weather in every other conversation;
//   - after the tool results: a longer answer, streamed slowly, so an instance can be
//     killed in the middle of it.
var askRE = regexp.MustCompile(`^transfer (\d+) to (\S+)( and check the weather| after checking the weather)?$`)

// turnDelay is the fake's wait before each frame.
const turnDelay = 12 * time.Millisecond

// answerWords is how many words the final answer streams.
const answerWords = 40

func newModel() *openaitest.Server {
	return openaitest.NewServerFunc(func(req openaitest.Request) openaitest.Turn {
		var ask string
		toolResults := 0
		for _, m := range req.Messages {
			switch m.Role {
			case "user":
				if ask == "" {
					ask = m.Text()
				}
			case "tool":
				toolResults++
			}
		}
		match := askRE.FindStringSubmatch(ask)
		if match == nil {
			return openaitest.Turn{Text: "I only move money in this test.", Delay: turnDelay}
		}
		amount, to, weather := match[1], match[2], match[3] != ""
		if strings.HasPrefix(match[3], " after") {
			// Two turns before the park: the weather alone, then the transfer.
			switch toolResults {
			case 0:
				return openaitest.Turn{Text: "Let me look at the weather in " + to + " first.", Delay: turnDelay,
					ToolCalls: []openaitest.ToolCall{{ID: "call_weather", Name: "tools_weather", Arguments: fmt.Sprintf(`{"city":%q}`, to)}}}
			case 1:
				return openaitest.Turn{Text: "Now I send " + amount + " to " + to + ".", Delay: turnDelay,
					ToolCalls: []openaitest.ToolCall{{ID: "call_transfer", Name: "tools_transfer", Arguments: fmt.Sprintf(`{"to":%q,"amount":%s}`, to, amount)}}}
			}
			toolResults = 1
		}
		if toolResults > 0 {
			words := make([]string, answerWords)
			for i := range words {
				words[i] = fmt.Sprintf("w%d", i)
			}
			return openaitest.Turn{Text: fmt.Sprintf("Sent %s to %s. %s done.", amount, to, strings.Join(words, " ")), Delay: turnDelay}
		}
		var calls []openaitest.ToolCall
		if weather {
			calls = append(calls, openaitest.ToolCall{ID: "call_weather", Name: "tools_weather", Arguments: fmt.Sprintf(`{"city":%q}`, to)})
		}
		calls = append(calls, openaitest.ToolCall{ID: "call_transfer", Name: "tools_transfer", Arguments: fmt.Sprintf(`{"to":%q,"amount":%s}`, to, amount)})
		return openaitest.Turn{Text: "Let me send " + amount + " to " + to + " for you.", ToolCalls: calls, Delay: turnDelay}
	})
}
