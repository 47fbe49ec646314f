package textcall_test

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
	"github.com/reinhq/rein/llm/think"
)

func ExampleParse() {
	catalog := textcall.NewCatalog([]llm.ToolSpec{{
		Name:   "get_weather",
		Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`),
	}})
	text := `<think>The user wants the weather.</think>Let me check.
<｜DSML｜tool_calls>
<｜DSML｜invoke name="get_weather">
<｜DSML｜parameter name="city" string="true">Shanghai</｜DSML｜parameter>
<｜DSML｜parameter name="days" string="true">3</｜DSML｜parameter>
</｜DSML｜invoke>
</｜DSML｜tool_calls>`
	visible, calls := textcall.Parse(text, textcall.Options{Catalog: catalog})
	fmt.Printf("%q\n", visible)
	for _, c := range calls {
		fmt.Println(c.Name, c.Args)
	}
	// Output:
	// "Let me check."
	// get_weather {"city":"Shanghai","days":3}
}

// An adapter runs the think filter first and gives the DSML filter only the
// content, so reasoning is never parsed for calls.
func ExampleFilter() {
	th := think.NewFilter(think.Options{})
	dsml := textcall.NewFilter(textcall.Options{})
	show := func(segs []think.Segment) {
		for _, s := range segs {
			if s.Thinking {
				fmt.Printf("reasoning %q\n", s.Text)
				continue
			}
			text, calls := dsml.Write(s.Text)
			if text != "" {
				fmt.Printf("text %q\n", text)
			}
			for _, c := range calls {
				fmt.Println("call", c.Name, c.Args)
			}
		}
	}
	for _, chunk := range []string{"<think>a < b, so call</think>If a < b", ", I check.<｜DSML｜invoke name=\"now\"></｜DSML", "｜invoke> Done."} {
		show(th.Write(chunk))
	}
	show(th.Flush())
	text, _ := dsml.Flush()
	fmt.Printf("text %q\n", text)
	// Output:
	// reasoning "a < b, so call"
	// text "If a < b"
	// text ", I check."
	// text " Done."
	// call now {}
	// text ""
}
