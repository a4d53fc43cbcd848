package main

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/scripted"
)

// Structured output: extract.weather asks the model for a typed value. The offline model
// has no native JSON mode, so ai puts the schema in the system prompt (the fallback);
// OpenAI and Anthropic get it in their own structured-output modes.
var Extract = engine.NewUnit("extract")

// WeatherIn is the text to read.
type WeatherIn struct {
	Text string `json:"text"`
}

// Weather is what the model is asked for.
type Weather struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

// ExtractWeather answers a typed Weather, or InvalidModelOutput with the issues of the
// model's last reply after two more tries.
var ExtractWeather = engine.Define[WeatherIn, Weather](Extract, "weather", engine.Public(),
	engine.Describe("Read the city and its temperature out of a text."), engine.Errors(ai.InvalidModelOutput))

func extract(model *ai.ModelDef) engine.Option {
	return engine.Bind(ExtractWeather, func(fx *engine.Fx, in WeatherIn) (Weather, error) {
		return ai.AskAs[Weather](fx, model, in.Text, ai.AskOptions{Name: "weather"})
	})
}

var (
	cityRe = regexp.MustCompile(`\b(?:in|at) ([A-Z][\p{L}]+)`)
	tempRe = regexp.MustCompile(`(-?\d+(?:\.\d+)?) ?(?:°|degrees)`)
)

// offlineJSON is the offline model's answer when the prompt asks for JSON: what it can
// read of a city and a temperature, which validates only when it found both.
func offlineJSON(text string) scripted.Turn {
	v := map[string]any{}
	if m := cityRe.FindStringSubmatch(text); m != nil {
		v["city"] = m[1]
	}
	if m := tempRe.FindStringSubmatch(text); m != nil {
		v["tempC"] = json.Number(m[1])
	}
	b, _ := json.Marshal(v)
	return scripted.Turn{Text: string(b)}
}

// asksForJSON reports whether a request carries ai's structured-output instruction.
func asksForJSON(req ai.Request) bool { return strings.Contains(req.System, "JSON Schema") }
