package llm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// Items are written with the role and origin names they had when the types
// were strings: stored threads, exports and recordings read as before.
func TestItemsAreWrittenWithTheNamesOfTheirRoleAndOrigin(t *testing.T) {
	for _, tc := range []struct {
		item Item
		json string
	}{
		{Item{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}}, `{"role":"user","parts":[{"kind":"text","text":"hi"}]}`},
		{Item{ID: "t.1", TurnID: "t", Role: RoleAssistant, Parts: []Part{}}, `{"id":"t.1","turn_id":"t","role":"assistant","parts":[]}`},
		{Item{Role: RoleTool}, `{"role":"tool","parts":null}`},
		{Item{}, `{"role":"","parts":null}`},
		{Item{Role: RoleUser, Origin: OriginDirective}, `{"role":"user","origin":"directive","parts":null}`},
		{Item{Role: RoleUser, Origin: OriginMarker}, `{"role":"user","origin":"marker","parts":null}`},
		{Item{Role: RoleUser, Origin: OriginSteer}, `{"role":"user","origin":"steer","parts":null}`},
		{Item{Role: RoleUser, Origin: OriginCompaction}, `{"role":"user","origin":"compaction","parts":null}`},
	} {
		b, err := json.Marshal(tc.item)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.item, b, err, tc.json)
			continue
		}
		var back Item
		if err := json.Unmarshal(b, &back); err != nil || back.Role != tc.item.Role || back.Origin != tc.item.Origin {
			t.Errorf("Unmarshal(%s) = role %v origin %v, %v; want %v %v", b, back.Role, back.Origin, err, tc.item.Role, tc.item.Origin)
		}
	}
}

func TestRoleAndOriginNames(t *testing.T) {
	for r, name := range map[Role]string{RoleNone: "", RoleUser: "user", RoleAssistant: "assistant", RoleTool: "tool"} {
		if got := r.String(); got != name {
			t.Errorf("Role(%d).String() = %q; want %q", uint8(r), got, name)
		}
		if got, err := ParseRole(name); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v; want %d", name, got, err, uint8(r))
		}
		if got := fmt.Sprintf("%q", r); got != fmt.Sprintf("%q", name) {
			t.Errorf("%%q of Role(%d) = %s; want %q", uint8(r), got, name)
		}
	}
	for o, name := range map[Origin]string{OriginInput: "", OriginDirective: "directive", OriginMarker: "marker", OriginSteer: "steer", OriginCompaction: "compaction"} {
		if got := o.String(); got != name {
			t.Errorf("Origin(%d).String() = %q; want %q", uint8(o), got, name)
		}
		if got, err := ParseOrigin(name); err != nil || got != o {
			t.Errorf("ParseOrigin(%q) = %v, %v; want %d", name, got, err, uint8(o))
		}
	}
}

// A name the package does not know is an error, never a silent value.
func TestAnUnknownRoleOrOriginIsAnError(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"role":"robot","parts":[]}`, `unknown role "robot"`},
		{`{"role":"User","parts":[]}`, `unknown role "User"`},
		{`{"role":"user","origin":"whisper","parts":[]}`, `unknown item origin "whisper"`},
		{`{"role":1,"parts":[]}`, `cannot unmarshal number`},
	} {
		var it Item
		err := json.Unmarshal([]byte(tc.json), &it)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v; want an error with %q", tc.json, err, tc.want)
		}
	}
	if _, err := ParseRole("system"); err == nil {
		t.Error(`ParseRole("system"): no error`)
	}
	if _, err := ParseOrigin("input"); err == nil {
		t.Error(`ParseOrigin("input"): no error`)
	}
	if _, err := json.Marshal(Item{Role: Role(9)}); err == nil {
		t.Error("Marshal of a role without a name: no error")
	}
	if _, err := json.Marshal(Item{Role: RoleUser, Origin: Origin(9)}); err == nil {
		t.Error("Marshal of an origin without a name: no error")
	}
	if got := Role(9).String(); got != "role(9)" {
		t.Errorf("Role(9).String() = %q", got)
	}
}

// A new turn copies its thread's context: an Item's size is what a long
// thread costs at every turn's start (88 bytes while Role and Origin were
// strings).
func TestAnItemIs64Bytes(t *testing.T) {
	if n := unsafe.Sizeof(Item{}); n > 64 {
		t.Errorf("an Item is %d bytes; want at most 64", n)
	}
}
