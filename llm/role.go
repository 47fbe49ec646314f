package llm

import "fmt"

// roleNames and originNames are the names Role and Origin values are
// written as in JSON, SQL and text, indexed by value. They are the strings
// the types held before they became integers: stored items and the wire
// read exactly as they did.
var (
	roleNames   = [...]string{RoleNone: "", RoleUser: "user", RoleAssistant: "assistant", RoleTool: "tool"}
	originNames = [...]string{OriginInput: "", OriginDirective: "directive", OriginMarker: "marker", OriginSteer: "steer", OriginCompaction: "compaction"}
)

// String returns the role's name: "user", "assistant", "tool", or "" for
// the zero value. A value without a name (possible only by conversion)
// is written "role(N)".
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// ParseRole returns the role named s ("" is the zero value). A name it
// does not know is an error.
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if n == s {
			return Role(i), nil
		}
	}
	return 0, fmt.Errorf("llm: unknown role %q; want user, assistant or tool", s)
}

// MarshalText writes the role's name. A value without a name is an error.
func (r Role) MarshalText() ([]byte, error) {
	if int(r) >= len(roleNames) {
		return nil, fmt.Errorf("llm: role %d has no name", uint8(r))
	}
	return []byte(roleNames[r]), nil
}

// UnmarshalText reads a role's name, as ParseRole.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// String returns the origin's name: "directive", "marker", "steer",
// "compaction", or "" for input (the zero value). A value without a name
// (possible only by conversion) is written "origin(N)".
func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return fmt.Sprintf("origin(%d)", uint8(o))
}

// ParseOrigin returns the origin named s ("" is input, the zero value). A
// name it does not know is an error.
func ParseOrigin(s string) (Origin, error) {
	for i, n := range originNames {
		if n == s {
			return Origin(i), nil
		}
	}
	return 0, fmt.Errorf("llm: unknown item origin %q; want \"\", directive, marker, steer or compaction", s)
}

// MarshalText writes the origin's name. A value without a name is an
// error.
func (o Origin) MarshalText() ([]byte, error) {
	if int(o) >= len(originNames) {
		return nil, fmt.Errorf("llm: origin %d has no name", uint8(o))
	}
	return []byte(originNames[o]), nil
}

// UnmarshalText reads an origin's name, as ParseOrigin.
func (o *Origin) UnmarshalText(b []byte) error {
	v, err := ParseOrigin(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}
