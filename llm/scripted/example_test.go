package scripted_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
)

func Example() {
	m, err := scripted.Parse([]byte(`
rounds:
  - text: Let me look.
    calls:
      - {id: c1, name: list_dir, args: {path: .}}
  - text: There are two files.
    expect:
      - result: {call: c1, contains: main.go}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	history := []llm.Item{llm.UserText("What is here?")}
	st, _ := m.Stream(ctx, &llm.Request{Items: history})
	resp, _ := llm.Collect(st)
	call := resp.Parts[1].Call
	fmt.Println(resp.Finish, call.Name, call.Args)

	history = append(history,
		llm.Item{Role: llm.RoleAssistant, Parts: resp.Parts},
		llm.ToolResult(llm.Result{CallID: call.ID, Name: call.Name, Content: "README.md"}))
	_, err = m.Stream(ctx, &llm.Request{Items: history})
	fmt.Println(err)
	fmt.Println(m.Verify() != nil)
	// Output:
	// tool_calls list_dir {"path":"."}
	// scripted: bad_request: round 2 (line 6): expected the result of call "c1" to contain "main.go"; received "README.md"
	// true
}
