package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// Closest returns the name in known nearest to name by edit distance, when
// it is near enough to be a slip of the keyboard (at most a third of the
// name's length, and at least one edit), for a "did you mean" hint.
func Closest(name string, known []string) (string, bool) {
	best, bestD := "", -1
	lname := strings.ToLower(name)
	for _, k := range known {
		d := editDistance(lname, strings.ToLower(k))
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	limit := max(len([]rune(name))/3, 1)
	if bestD < 0 || bestD > limit || best == name {
		return "", false
	}
	return best, true
}

// editDistance is the edit distance between a and b in runes, a swap of
// two neighbours counting as one edit (the commonest slip: "modle").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table.
	pprev := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
		}
		pprev, prev, cur = prev, cur, pprev
	}
	return prev[len(rb)]
}

// unknownSetting describes the undecoded key k, with the setting it was
// probably meant to be when one of the table's keys is close.
func unknownSetting(k toml.Key) string {
	known := keysAt(reflect.TypeFor[File](), k[:len(k)-1])
	if c, ok := Closest(k[len(k)-1], known); ok {
		return fmt.Sprintf("%s (did you mean %s?)", k, strings.Join(append(append([]string(nil), k[:len(k)-1]...), c), "."))
	}
	return k.String()
}

// keysAt returns the keys the table at path of a file of type t may hold:
// the toml names of its struct's fields, embedded structs' included. A
// map's key is any name, so it is stepped over.
func keysAt(t reflect.Type, path []string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(path) > 0 {
		switch t.Kind() {
		case reflect.Map:
			return keysAt(t.Elem(), path[1:])
		case reflect.Struct:
			f, ok := fieldByKey(t, path[0])
			if !ok {
				return nil
			}
			return keysAt(f.Type, path[1:])
		}
		return nil
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		if f.Anonymous {
			out = append(out, keysAt(f.Type, nil)...)
			continue
		}
		if name := tomlName(f); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// fieldByKey finds the field of struct t the key key decodes into,
// looking into embedded structs.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if f.Anonymous {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := fieldByKey(ft, key); ok {
					return g, true
				}
			}
			continue
		}
		if tomlName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tomlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}
