package textcall

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/think"
)

var testCatalog = NewCatalog([]llm.ToolSpec{
	{Name: "web_search", Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
	{Name: "paper_search", Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer"}}}`)},
	{Name: "exec", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
	{Name: "ask_user", Schema: json.RawMessage(`{"type":"object","properties":{"questions":{"type":"array","items":{"type":"object"}}}}`)},
	{Name: "get_weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`)},
	{Name: "typed", Schema: json.RawMessage(`{"type":"object","properties":{
		"s":{"type":"string"},
		"n":{"type":"number"},
		"b":{"type":"boolean"},
		"o":{"properties":{"a":{"type":"string"}}},
		"u":{"anyOf":[{"type":"string"},{"type":"array","items":{}}]},
		"l":{"type":["integer","null"]}
	}}`)},
})

type call struct{ name, args string }

const (
	fw  = "｜DSML｜"
	fw2 = "｜｜DSML｜｜"
)

// Example A, B and C are the examples of deeptutor-loop-spec §6.1.
const (
	exampleA = "Let me check two sources.\n" +
		"<｜DSML｜tool_calls>\n" +
		"<｜DSML｜invoke name=\"web_search\">\n" +
		"<｜DSML｜parameter name=\"query\" string=\"true\">Riemann sum definition</｜DSML｜parameter>\n" +
		"</｜DSML｜invoke>\n" +
		"<｜DSML｜invoke name=\"paper_search\">\n" +
		"<｜DSML｜parameter name=\"query\" string=\"true\">numerical integration pedagogy</｜DSML｜parameter>\n" +
		"<｜DSML｜parameter name=\"max_results\" string=\"false\">5</｜DSML｜parameter>\n" +
		"</｜DSML｜invoke>\n" +
		"</｜DSML｜tool_calls>"
	exampleB = `<｜｜DSML｜｜tool_calls> <｜｜DSML｜｜invoke name="exec"> <｜｜DSML｜｜parameter name="command" string="true">python -c "from pptx import Presentation; prs=Presentation(); prs.save('test.pptx')"</｜｜DSML｜｜parameter> </｜｜DSML｜｜invoke> </｜｜DSML｜｜tool_calls>`
	exampleC = `Great job! <｜DSML｜tool_calls><｜DSML｜invoke name="ask_user"><｜DSML｜parameter name="questions" string="true">[{"id":"q1","prompt":"Continue to the next topic?"}]</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls> Choose what to study next.`
)

// block writes one wrapper with one invoke, for the marker and wrapper
// variants.
func block(m, wrap, name, params string) string {
	return "<" + m + wrap + ">\n<" + m + `invoke name="` + name + `">` + params + "</" + m + "invoke>\n</" + m + wrap + ">"
}

func weather(m string) string {
	return "<" + m + `parameter name="city" string="true">Shanghai</` + m + "parameter>\n<" + m + `parameter name="days" string="false">3</` + m + "parameter>\n"
}

var weatherCall = call{"get_weather", `{"city":"Shanghai","days":3}`}

type parseTestCase struct {
	name    string
	in      string
	catalog *Catalog
	think   think.Options
	visible string
	calls   []call
}

var parseTests = []parseTestCase{
	{"example A: V4, two calls, prose before", exampleA, testCatalog, think.Options{}, "Let me check two sources.",
		[]call{{"web_search", `{"query":"Riemann sum definition"}`}, {"paper_search", `{"query":"numerical integration pedagogy","max_results":5}`}}},
	{"example B: doubled bars on one line, code in a string", exampleB, testCatalog, think.Options{}, "",
		[]call{{"exec", `{"command":"python -c \"from pptx import Presentation; prs=Presentation(); prs.save('test.pptx')\""}`}}},
	{"example C: array marked string decoded by schema", exampleC, testCatalog, think.Options{}, "Great job!  Choose what to study next.",
		[]call{{"ask_user", `{"questions":[{"id":"q1","prompt":"Continue to the next topic?"}]}`}}},
	{"example C without a schema keeps the string", exampleC, nil, think.Options{}, "Great job!  Choose what to study next.",
		[]call{{"ask_user", `{"questions":"[{\"id\":\"q1\",\"prompt\":\"Continue to the next topic?\"}]"}`}}},

	{"V3.2 function_calls wrapper", "Sure.\n" + block(fw, "function_calls", "get_weather", weather(fw)), testCatalog, think.Options{}, "Sure.", []call{weatherCall}},
	{"tool_use wrapper", block(fw, "tool_use", "get_weather", weather(fw)) + "\nDone.", testCatalog, think.Options{}, "Done.", []call{weatherCall}},
	{"ASCII bars", block("|DSML|", "tool_calls", "get_weather", weather("|DSML|")), testCatalog, think.Options{}, "", []call{weatherCall}},
	{"doubled ASCII bars", block("||DSML||", "tool_calls", "get_weather", weather("||DSML||")), testCatalog, think.Options{}, "", []call{weatherCall}},
	{"doubled fullwidth bars", block(fw2, "tool_calls", "get_weather", weather(fw2)), testCatalog, think.Options{}, "", []call{weatherCall}},
	{"double vertical line bars", block("‖DSML‖", "tool_calls", "get_weather", weather("‖DSML‖")), testCatalog, think.Options{}, "", []call{weatherCall}},
	{"mixed case marker and keywords", block("｜dsml｜", "TOOL_CALLS", "get_weather", weather("｜Dsml｜")), testCatalog, think.Options{}, "", []call{weatherCall}},
	{"single quotes", `<｜DSML｜tool_calls><｜DSML｜invoke name='get_weather'><｜DSML｜parameter name='city' string='true'>Shanghai</｜DSML｜parameter><｜DSML｜parameter name='days' string='false'>3</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>`,
		testCatalog, think.Options{}, "", []call{weatherCall}},
	{"spaces around attributes and closing bracket", `<｜DSML｜tool_calls ><｜DSML｜invoke  name = "get_weather" ><｜DSML｜parameter string="true" name="city" >Shanghai</｜DSML｜parameter ><｜DSML｜parameter name="days">3</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>`,
		testCatalog, think.Options{}, "", []call{weatherCall}},
	{"wrapper open tag missing its bracket", "<｜DSML｜tool_calls\n" + `<｜DSML｜invoke name="get_weather">` + weather(fw) + "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
		testCatalog, think.Options{}, "", []call{weatherCall}},
	{"invoke without a wrapper", "Checking.\n" + `<｜DSML｜invoke name="get_weather">` + weather(fw) + "</｜DSML｜invoke>\nOne moment.",
		testCatalog, think.Options{}, "Checking.\n\nOne moment.", []call{weatherCall}},
	{"wrapper left open before prose", `<｜DSML｜tool_calls><｜DSML｜invoke name="get_weather">` + weather(fw) + "</｜DSML｜invoke>\nI will wait for the result.",
		testCatalog, think.Options{}, "I will wait for the result.", []call{weatherCall}},
	{"wrapper left open at the end", `Now: <｜DSML｜tool_calls><｜DSML｜invoke name="get_weather">` + weather(fw) + "</｜DSML｜invoke>\n",
		testCatalog, think.Options{}, "Now:", []call{weatherCall}},
	{"two wrappers", block(fw, "tool_calls", "web_search", `<｜DSML｜parameter name="query" string="true">a</｜DSML｜parameter>`) + "\nand\n" + block(fw, "tool_calls", "web_search", `<｜DSML｜parameter name="query" string="true">b</｜DSML｜parameter>`),
		testCatalog, think.Options{}, "and", []call{{"web_search", `{"query":"a"}`}, {"web_search", `{"query":"b"}`}}},

	{"orphan close tags removed", "Hello</｜DSML｜parameter> world</｜DSML｜invoke></｜DSML｜tool_calls>!", nil, think.Options{}, "Hello world!", nil},
	{"orphan parameter open tag removed", `x <｜DSML｜parameter name="a">1 y`, nil, think.Options{}, "x 1 y", nil},
	{"empty wrapper removed", "a <｜DSML｜tool_calls>\n</｜DSML｜tool_calls> b", nil, think.Options{}, "a  b", nil},
	{"orphans inside a wrapper removed", block(fw, "tool_calls", "get_weather", weather(fw)+"</｜DSML｜parameter>") + "</｜DSML｜invoke>", testCatalog, think.Options{}, "", []call{weatherCall}},
	{"prose with less-than signs", "if a < b and c<d then <b>bold</b> x<|y| <|z", nil, think.Options{}, "if a < b and c<d then <b>bold</b> x<|y| <|z", nil},
	{"plain text is trimmed", "\n\n  Hello.\n", nil, think.Options{}, "Hello.", nil},

	{"markup inside think is not parsed", "<think>I could call <｜DSML｜invoke name=\"exec\"><｜DSML｜parameter name=\"command\" string=\"true\">rm -rf /</｜DSML｜parameter></｜DSML｜invoke></think>No tools needed.",
		testCatalog, think.Options{}, "No tools needed.", nil},
	{"markup in reasoning of a model that starts inside think", "<｜DSML｜invoke name=\"exec\"><｜DSML｜parameter name=\"command\">ls</｜DSML｜parameter></｜DSML｜invoke></think>Answer.",
		testCatalog, think.Options{StartInside: true}, "Answer.", nil},
	{"markup after think is parsed", "<think>plan</think>" + block(fw, "tool_calls", "get_weather", weather(fw)), testCatalog, think.Options{}, "", []call{weatherCall}},

	{"incomplete invoke at the end is released", "Let me look.\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"web_search\">\n<｜DSML｜parameter name=\"query\" string=\"true\">Riem",
		testCatalog, think.Options{}, "Let me look.\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"web_search\">\n<｜DSML｜parameter name=\"query\" string=\"true\">Riem", nil},
	{"second invoke cut off releases the whole block", "<｜DSML｜tool_calls>" + `<｜DSML｜invoke name="get_weather">` + weather(fw) + `</｜DSML｜invoke><｜DSML｜invoke name="get_weather">`,
		testCatalog, think.Options{}, "<｜DSML｜tool_calls>" + `<｜DSML｜invoke name="get_weather">` + weather(fw) + `</｜DSML｜invoke><｜DSML｜invoke name="get_weather">`, nil},
	{"wrapper open alone at the end is released", "Calling now <｜DSML｜tool_calls>\n", nil, think.Options{}, "Calling now <｜DSML｜tool_calls>", nil},
	{"partial tag at the end is released", "Calling now <｜DSML｜too", nil, think.Options{}, "Calling now <｜DSML｜too", nil},

	{"invoke without a name makes no call", block(fw, "tool_calls", " ", weather(fw)), testCatalog, think.Options{}, "", nil},
	{"repeated parameter: last wins in place", block(fw, "tool_calls", "x", `<｜DSML｜parameter name="a">1</｜DSML｜parameter><｜DSML｜parameter name="b">2</｜DSML｜parameter><｜DSML｜parameter name="a">3</｜DSML｜parameter>`),
		nil, think.Options{}, "", []call{{"x", `{"a":3,"b":2}`}}},
	{"invoke without parameters", block(fw, "tool_calls", "now", ""), nil, think.Options{}, "", []call{{"now", `{}`}}},
	{"unclosed parameter ends at the invoke close", block(fw, "tool_calls", "x", `<｜DSML｜parameter name="a" string="true">v `), nil, think.Options{}, "", []call{{"x", `{"a":"v "}`}}},
	{"invoke open closes an unclosed invoke", `<｜DSML｜tool_calls><｜DSML｜invoke name="a"><｜DSML｜invoke name="b"></｜DSML｜invoke></｜DSML｜tool_calls>`, nil, think.Options{}, "", []call{{"a", `{}`}, {"b", `{}`}}},
	{"tags and less-than inside a value are text", block(fw, "tool_calls", "x", `<｜DSML｜parameter name="code" string="true">if a < b { return "<｜DSML｜invoke name=\"y\">" }</｜DSML｜other></｜DSML｜parameter>`),
		nil, think.Options{}, "", []call{{"x", `{"code":"if a < b { return \"<｜DSML｜invoke name=\\\"y\\\">\" }</｜DSML｜other>"}`}}},
	{"unmarked values are JSON when they parse", block(fw, "tool_calls", "x", `<｜DSML｜parameter name="a"> [1, 2] </｜DSML｜parameter><｜DSML｜parameter name="b">true</｜DSML｜parameter><｜DSML｜parameter name="c">hello</｜DSML｜parameter><｜DSML｜parameter name="d" string="false">{"k": null}</｜DSML｜parameter>`),
		nil, think.Options{}, "", []call{{"x", `{"a":[1,2],"b":true,"c":"hello","d":{"k":null}}`}}},
	{"string=true keeps text verbatim", block(fw, "tool_calls", "x", `<｜DSML｜parameter name="a" string="true"> 42 </｜DSML｜parameter><｜DSML｜parameter name="b" string="TRUE">null</｜DSML｜parameter>`),
		nil, think.Options{}, "", []call{{"x", `{"a":" 42 ","b":"null"}`}}},
	{"declared types win", block(fw, "tool_calls", "typed",
		`<｜DSML｜parameter name="s" string="false">42</｜DSML｜parameter>`+
			`<｜DSML｜parameter name="n" string="true">4.5</｜DSML｜parameter>`+
			`<｜DSML｜parameter name="b" string="true">false</｜DSML｜parameter>`+
			`<｜DSML｜parameter name="o" string="true">{"a":"x"}</｜DSML｜parameter>`+
			`<｜DSML｜parameter name="u" string="true">[1]</｜DSML｜parameter>`+
			`<｜DSML｜parameter name="l" string="true">null</｜DSML｜parameter>`+
			`<｜DSML｜parameter name="n2" string="true">7</｜DSML｜parameter>`),
		testCatalog, think.Options{}, "", []call{{"typed", `{"s":"42","n":4.5,"b":false,"o":{"a":"x"},"u":[1],"l":null,"n2":"7"}`}}},
	{"declared type that does not match keeps the text", block(fw, "tool_calls", "typed", `<｜DSML｜parameter name="n" string="true">many</｜DSML｜parameter><｜DSML｜parameter name="o" string="true">[1]</｜DSML｜parameter>`),
		testCatalog, think.Options{}, "", []call{{"typed", `{"n":"many","o":"[1]"}`}}},
	{"no HTML escaping in arguments", block(fw, "tool_calls", "x", `<｜DSML｜parameter name="a" string="true">a < b && c > d</｜DSML｜parameter>`),
		nil, think.Options{}, "", []call{{"x", `{"a":"a < b && c > d"}`}}},
}

// seqIDs returns an id generator counting from 1.
func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id%d", n) }
}

func checkCalls(t *testing.T, got []llm.Call, want []call) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d calls %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i, c := range got {
		if c.Name != want[i].name || c.Args != want[i].args {
			t.Errorf("call %d = %s %s, want %s %s", i, c.Name, c.Args, want[i].name, want[i].args)
		}
		if c.Format != llm.CallText {
			t.Errorf("call %d format = %q, want %q", i, c.Format, llm.CallText)
		}
		if !json.Valid([]byte(c.Args)) {
			t.Errorf("call %d args are not JSON: %s", i, c.Args)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			visible, calls := Parse(tt.in, Options{Catalog: tt.catalog, Think: tt.think, NewID: seqIDs()})
			if visible != tt.visible {
				t.Errorf("visible = %q, want %q", visible, tt.visible)
			}
			checkCalls(t, calls, tt.calls)
			for i, c := range calls {
				if want := fmt.Sprintf("id%d", i+1); c.ID != want {
					t.Errorf("call %d id = %q, want %q", i, c.ID, want)
				}
			}
		})
	}
}

func TestDefaultIDsAreFresh(t *testing.T) {
	idRE := regexp.MustCompile(`^call_txt_[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for round := 0; round < 50; round++ {
		_, calls := Parse(exampleA, Options{Catalog: testCatalog})
		for _, c := range calls {
			if !idRE.MatchString(c.ID) {
				t.Fatalf("id %q does not look like call_txt_<hex>", c.ID)
			}
			if seen[c.ID] {
				t.Fatalf("id %q repeated", c.ID)
			}
			seen[c.ID] = true
		}
	}
}

func TestParseLeavesPlainTextAlone(t *testing.T) {
	in := "Nothing to call here. 5 < 6."
	visible, calls := Parse(in, Options{})
	if visible != in || calls != nil {
		t.Fatalf("Parse(%q) = %q, %v", in, visible, calls)
	}
	plain := "  No markup at all.\n"
	if n := testing.AllocsPerRun(100, func() { Parse(plain, Options{}) }); n != 0 {
		t.Errorf("Parse of text without '<' allocates %v times", n)
	}
}

func TestCatalogIgnoresBadSchemas(t *testing.T) {
	c := NewCatalog([]llm.ToolSpec{{Name: "bad", Schema: json.RawMessage(`{"type":`)}, {Name: "none"}})
	_, calls := Parse(block(fw, "tool_calls", "bad", `<｜DSML｜parameter name="a" string="true">[1]</｜DSML｜parameter>`), Options{Catalog: c})
	checkCalls(t, calls, []call{{"bad", `{"a":"[1]"}`}})
}
