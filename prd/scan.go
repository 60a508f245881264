package prd

import (
	"encoding/json"
	"fmt"
)

// This file walks JSON text that encoding/json has already checked, keeping
// every value's raw bytes and offset: the bytes let Marshal re-emit what it
// does not own unchanged, the offsets let errors point at a line and column.

// field is one member of a JSON object, kept as written.
type field struct {
	key    string // decoded
	rawKey []byte // as written, quotes included
	value  []byte // as written
	off    int    // offset of value in the parsed data; meaningless after Marshal
}

// element is one value of a JSON array, kept as written.
type element struct {
	value []byte
	off   int
}

// fields splits the object that starts at data[off] into its members.
// data must be valid JSON.
func fields(data []byte, off int) []field {
	var fs []field
	i := skipSpace(data, off+1) // past '{'
	for data[i] != '}' {
		keyEnd := valueEnd(data, i)
		var key string
		// The key is a valid JSON string, so this cannot fail.
		_ = json.Unmarshal(data[i:keyEnd], &key)
		v := skipSpace(data, skipSpace(data, keyEnd)+1) // past ':'
		end := valueEnd(data, v)
		fs = append(fs, field{key: key, rawKey: data[i:keyEnd], value: data[v:end], off: v})
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return fs
}

// elements splits the array that starts at data[off] into its values.
// data must be valid JSON.
func elements(data []byte, off int) []element {
	var es []element
	i := skipSpace(data, off+1) // past '['
	for data[i] != ']' {
		end := valueEnd(data, i)
		es = append(es, element{value: data[i:end], off: i})
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return es
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd returns the offset just past the valid JSON value that starts at
// data[i]. It counts depth instead of recursing, so deep nesting is no danger.
func valueEnd(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			i = stringEnd(data, i)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		case ' ', '\t', '\n', '\r', ',', ':':
			i++ // only met inside a container
		default: // a number or a literal
			for i < len(data) && !isDelim(data[i]) {
				i++
			}
		}
		if depth == 0 {
			return i
		}
	}
	return i
}

func isDelim(c byte) bool {
	switch c {
	case '"', '{', '[', '}', ']', ' ', '\t', '\n', '\r', ',', ':':
		return true
	}
	return false
}

// stringEnd returns the offset just past the JSON string that starts at data[i].
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// kind names the JSON type of a raw value, for messages.
func kind(v []byte) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// at prefixes a message with name:line:col for the byte at offset off of data.
// It is the one place that turns offsets into positions: lines and columns
// count from 1, and columns count characters, as editors show them.
func at(name string, data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line, col := 1, 1
	for _, r := range string(data[:off]) {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s:%d:%d", name, line, col)
}

// syntaxOffset returns the offset of the byte that a *json.SyntaxError blames:
// its Offset counts the bytes read, the bad one included, so the bad byte is the
// one before, except at an unexpected end, where the position is the end itself.
func syntaxOffset(data []byte, err *json.SyntaxError) int {
	off := int(err.Offset)
	if off >= len(data) && err.Error() == "unexpected end of JSON input" {
		return len(data)
	}
	return off - 1
}
