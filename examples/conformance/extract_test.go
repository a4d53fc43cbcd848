package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/internal/testenv"
)

// TestWeatherExtract runs APP.md's "Structured output" against a process of the app: the
// model is asked with the JSON-schema response format, a valid reply is the typed output,
// an invalid one is asked again at most twice with its issues and then fails with
// InvalidModelOutput {issues}, and an anonymous caller is Unauthorized.
func TestWeatherExtract(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts the reference app")
	}
	t.Parallel()
	model := openaitest.NewServerFunc(func(req openaitest.Request) openaitest.Turn {
		if strings.Contains(req.Messages[0].Text(), "Lima") {
			return openaitest.Turn{Text: `{"city":"Lima","tempC":"warm"}`}
		}
		return openaitest.Turn{Text: `{"city":"Oslo","tempC":-3.5}`}
	})
	defer model.Close()
	app := testenv.StartProcess(t, testenv.Build(t, "."), testenv.ProcessOptions{Name: "extract", Env: []string{
		"ENGINE_JOURNAL=memory", "ENGINE_MODEL_BASE_URL=" + model.URL(), "ENGINE_MODEL_API_KEY=test",
		"ENGINE_JWT_KEY=extract-test-key-0123456789abcdef"}})
	token := signIn(t, app.URL, "alice@example.com")

	status, body := postJSON(t, app.URL+"/_engine/weather/extract", token, `{"text":"Oslo shivers at minus 3.5 degrees."}`)
	if status != http.StatusOK || body != `{"data":{"city":"Oslo","tempC":-3.5},"error":null}` {
		t.Fatalf("extract: %d %s", status, body)
	}
	req := model.Requests()[0]
	if f := req.ResponseFormat; f == nil || f.Type != "json_schema" || !strings.Contains(string(f.JSONSchema.Schema), `"tempC"`) {
		t.Errorf("response_format = %+v, want the JSON schema of {city, tempC}", req.ResponseFormat)
	}

	status, body = postJSON(t, app.URL+"/_engine/weather/extract", token, `{"text":"Lima is warm."}`)
	var env struct {
		Error struct {
			Code string `json:"code"`
			Data struct {
				Issues []string `json:"issues"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error.Code != "InvalidModelOutput" || len(env.Error.Data.Issues) == 0 {
		t.Fatalf("invalid replies: %d %s, want InvalidModelOutput with issues", status, body)
	}
	if n := len(model.Requests()); n != 4 {
		t.Errorf("%d model requests, want 1 + 3 (the first ask and two more)", n)
	}
	if last := model.Requests()[3].Messages; !strings.Contains(last[len(last)-1].Text(), "tempC") {
		t.Errorf("the last retry's message %q does not carry the issue", last[len(last)-1].Text())
	}

	status, _ = postJSON(t, app.URL+"/_engine/weather/extract", "", `{"text":"Oslo"}`)
	if status != http.StatusUnauthorized {
		t.Errorf("anonymous extract: %d, want 401", status)
	}
}
