package textcall

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

func TestFormat(t *testing.T) {
	got := Format([]llm.Call{
		{ID: "c1", Name: "get_weather", Args: `{"city": "Shanghai", "days": 3}`},
		{ID: "c2", Name: "now"},
	})
	want := "<｜DSML｜tool_calls>\n" +
		"<｜DSML｜invoke name=\"get_weather\">\n" +
		"<｜DSML｜parameter name=\"city\" string=\"true\">Shanghai</｜DSML｜parameter>\n" +
		"<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n" +
		"</｜DSML｜invoke>\n" +
		"<｜DSML｜invoke name=\"now\">\n" +
		"</｜DSML｜invoke>\n" +
		"</｜DSML｜tool_calls>"
	if got != want {
		t.Fatalf("Format =\n%s\nwant\n%s", got, want)
	}
	if Format(nil) != "" {
		t.Fatal("Format(nil) is not empty")
	}
}

func TestFormatRoundTrip(t *testing.T) {
	calls := []llm.Call{
		{Name: "get_weather", Args: `{"city":"Shanghai","days":3}`},
		{Name: "write_file", Args: `{"path":"a.txt","content":"line1\n  <b>x</b> a < b\n","opts":{"mode":"0644"},"tags":["a","b"],"n":null,"f":1.5,"s":"5","e":""}`},
		{Name: "spaced", Args: ` { "a" : [ 1 , 2 ] } `},
		{Name: "not_an_object", Args: `[1]`},
	}
	want := []call{
		{"get_weather", `{"city":"Shanghai","days":3}`},
		{"write_file", `{"path":"a.txt","content":"line1\n  <b>x</b> a < b\n","opts":{"mode":"0644"},"tags":["a","b"],"n":null,"f":1.5,"s":"5","e":""}`},
		{"spaced", `{"a":[1,2]}`},
		{"not_an_object", `{}`},
	}
	visible, got := Parse("Writing it.\n"+Format(calls), Options{})
	if visible != "Writing it." {
		t.Errorf("visible = %q", visible)
	}
	checkCalls(t, got, want)
}

func TestFormatQuotesNames(t *testing.T) {
	got := Format([]llm.Call{{Name: `say"hi`, Args: `{"a\"b":1}`}})
	if !strings.Contains(got, `name='say"hi'`) || !strings.Contains(got, `name='a"b'`) {
		t.Fatalf("Format = %s", got)
	}
}

func TestInstructions(t *testing.T) {
	specs := []llm.ToolSpec{
		{Name: "get_weather", Description: "Weather for a city.", Schema: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}}`)},
		{Name: "now", Description: "The time."},
	}
	got := Instructions(specs)
	for _, want := range []string{
		"### get_weather\nWeather for a city.\nParameters (JSON Schema): {\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}\n",
		"### now\nThe time.\n",
		"<tool_result name=\"TOOL_NAME\">",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Instructions lacks %q:\n%s", want, got)
		}
	}
	// The example the model is shown must be what the parser reads.
	_, calls := Parse(got, Options{})
	checkCalls(t, calls, []call{{"TOOL_NAME", `{"PARAMETER":"JSON: a number, boolean, array or object"}`}})
}

func TestFormatResults(t *testing.T) {
	got := FormatResults([]llm.Result{
		{CallID: "c1", Name: "get_weather", Content: "Sunny, 24 °C", Status: llm.ResultOK},
		{CallID: "c2", Name: "exec", Content: "exit status 1\n", Status: llm.ResultError},
		{CallID: "c3", Name: "now", Content: ""},
	})
	want := "<tool_result name=\"get_weather\">\nSunny, 24 °C\n</tool_result>\n" +
		"<tool_result name=\"exec\" status=\"error\">\nexit status 1\n</tool_result>\n" +
		"<tool_result name=\"now\">\n</tool_result>"
	if got != want {
		t.Fatalf("FormatResults =\n%s\nwant\n%s", got, want)
	}
}
