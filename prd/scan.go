package prd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// This file checks and walks JSON text, keeping every value's raw bytes and
// offset: the bytes let Marshal re-emit what it does not own unchanged, the
// offsets let errors point at a line and column.
//
// It is written for speed, because the loop reads and writes prd.json in
// every iteration and a file may hold thousands of stories: one pass checks
// the syntax and notes where every object and array ends, so that the walk
// that follows steps over a value it does not need without reading it.

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

// fieldsOf returns the members of the valid JSON object v.
func fieldsOf(v []byte) []field {
	t := newText(v)
	return t.fields(0, nil)
}

// newText returns the valid JSON text data, to walk without scan's notes.
func newText(data []byte) text {
	return text{data: data, src: string(data), plain: isPlain(data)}
}

// isPlain reports whether data has no backslash and is valid UTF-8.
func isPlain(data []byte) bool {
	return bytes.IndexByte(data, '\\') < 0 && utf8.Valid(data)
}

// text is JSON text being walked: data must be valid JSON.
type text struct {
	data []byte
	src  string // data as a string, for unquote
	// opens and ends are the offsets of the objects and arrays in order,
	// and the offsets just past each of them, as scan found them; nil when
	// scan was not used, and then every value is read to find its end.
	opens, ends []int
	next        int // where in opens to look first: the walk goes forward
	// canonical: the text is laid out as Marshal writes it.
	canonical bool
	// plain: the text has no escapes and is valid UTF-8, so its strings
	// decode to themselves.
	plain bool
}

// fields appends the members of the object that starts at data[off] to fs.
func (t *text) fields(off int, fs []field) []field {
	data := t.data
	i := skipSpace(data, off+1) // past '{'
	for data[i] != '}' {
		keyEnd := stringEnd(data, i)
		v := skipSpace(data, skipSpace(data, keyEnd)+1) // past ':'
		end := t.end(v)
		// Full slice expressions: nothing appended to a piece can write
		// into the text.
		fs = append(fs, field{key: unquote(t.src, data[i:keyEnd], i, t.plain), rawKey: data[i:keyEnd:keyEnd], value: data[v:end:end], off: v})
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return fs
}

// elements appends the values of the array that starts at data[off] to es.
func (t *text) elements(off int, es []element) []element {
	data := t.data
	i := skipSpace(data, off+1) // past '['
	for data[i] != ']' {
		end := t.end(i)
		es = append(es, element{value: data[i:end:end], off: i})
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return es
}

// end returns the offset just past the value that starts at data[i].
func (t *text) end(i int) int {
	if c := t.data[i]; (c == '{' || c == '[') && t.opens != nil {
		// Usually the next container in the text, or one a little further
		// on when the walk skipped some; a search otherwise.
		for k := t.next; k < len(t.opens) && k < t.next+8; k++ {
			if t.opens[k] == i {
				t.next = k + 1
				return t.ends[k]
			}
		}
		lo, hi := 0, len(t.opens)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if t.opens[m] < i {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(t.opens) && t.opens[lo] == i {
			t.next = lo + 1
			return t.ends[lo]
		}
	}
	return valueEnd(t.data, i)
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

// stringEnd returns the offset just past the valid JSON string that starts
// at data[i]. It jumps from quote to quote: a quote after an odd run of
// backslashes is escaped, any other ends the string.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data)
		}
		i += q
		n := 0
		for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
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

// maxScanDepth is the deepest nesting scan checks itself; deeper text is
// left to encoding/json, whose limit is higher.
const maxScanDepth = 256

// scan checks that data is a single JSON value, as json.Valid does, and
// notes where each object and array ends (see text). It is several times
// faster than json.Valid on the text prd.json is made of, long strings in
// a shallow tree. Whatever it accepts, encoding/json accepts too; it may
// turn down valid text it does not bother with (nesting deeper than
// maxScanDepth), so a caller asks encoding/json before calling text bad.
//
// canonical reports whether the text is laid out as Marshal writes it
// (json.Indent's layout with a 2-space indent), so that Marshal may copy
// its values as they are.
func scan(data []byte) (opens, ends []int, canonical, ok bool) {
	var stack [maxScanDepth]int // indexes in opens of the open containers
	depth := 0
	i := skipSpace(data, 0)
	canonical = i == 0
	for {
		// A value starts at i.
		if i >= len(data) {
			return nil, nil, false, false
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth == maxScanDepth {
				return nil, nil, false, false
			}
			stack[depth] = len(opens)
			depth++
			opens = append(opens, i)
			ends = append(ends, 0)
			j := skipSpace(data, i+1)
			if j < len(data) && data[j] == c+2 { // '}' or ']': empty
				canonical = canonical && j == i+1
				i = j
				break
			}
			canonical = canonical && isIndent(data[i+1:j], depth)
			i = j
			if c == '{' {
				if i = scanKey(data, i, &canonical); i < 0 {
					return nil, nil, false, false
				}
			}
			continue
		case '"':
			if i = scanString(data, i); i < 0 {
				return nil, nil, false, false
			}
		case 't':
			if !bytes.HasPrefix(data[i:], []byte("true")) {
				return nil, nil, false, false
			}
			i += 4
		case 'f':
			if !bytes.HasPrefix(data[i:], []byte("false")) {
				return nil, nil, false, false
			}
			i += 5
		case 'n':
			if !bytes.HasPrefix(data[i:], []byte("null")) {
				return nil, nil, false, false
			}
			i += 4
		default:
			if i = scanNumber(data, i); i < 0 {
				return nil, nil, false, false
			}
		}
		// A value ends at i (or, for an empty container, its closing
		// bracket is at i): close the containers it ends, then go on to
		// the next value.
		for {
			j := skipSpace(data, i)
			if depth == 0 {
				return opens, ends, canonical, j == len(data)
			}
			if j >= len(data) {
				return nil, nil, false, false
			}
			k := stack[depth-1]
			open := data[opens[k]]
			if data[j] == open+2 {
				if j > i || data[j-1] != open { // not the empty container's
					canonical = canonical && isIndent(data[i:j], depth-1)
				}
				depth--
				i = j + 1
				ends[k] = i
				continue
			}
			if data[j] != ',' {
				return nil, nil, false, false
			}
			canonical = canonical && j == i
			i = skipSpace(data, j+1)
			canonical = canonical && isIndent(data[j+1:i], depth)
			if open == '{' {
				if i = scanKey(data, i, &canonical); i < 0 {
					return nil, nil, false, false
				}
			}
			break
		}
	}
}

// isIndent reports whether space is the line break and indent that
// json.Indent puts before a line at nesting depth depth.
func isIndent(space []byte, depth int) bool {
	if len(space) != 1+2*depth || space[0] != '\n' {
		return false
	}
	for _, c := range space[1:] {
		if c != ' ' {
			return false
		}
	}
	return true
}

// scanKey checks an object's key and its colon at data[i], and returns the
// offset of its value, or -1. It clears canonical unless the colon follows
// the key directly and is followed by one space.
func scanKey(data []byte, i int, canonical *bool) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = scanString(data, i); i < 0 {
		return -1
	}
	j := skipSpace(data, i)
	if j >= len(data) || data[j] != ':' {
		return -1
	}
	k := skipSpace(data, j+1)
	*canonical = *canonical && j == i && k == j+2 && data[j+1] == ' '
	return k
}

// For reading eight bytes at a time.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain reports whether none of the eight bytes in x is a quote, a
// backslash or a control character, the bytes a string scan stops at.
func plain(x uint64) bool {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((q-ones)&^q|(b-ones)&^b|(x-ones*0x20)&^x)&highs == 0
}

// scanString checks the string at data[i] and returns the offset just past
// it, or -1. As for encoding/json, invalid UTF-8 is no error (decoding
// replaces it); a control character is.
func scanString(data []byte, i int) int {
	for i++; ; i++ {
		for i+8 <= len(data) && plain(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			return -1
		}
		c := data[i]
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c != '\\':
			continue
		}
		i++
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(data) {
				return -1
			}
			for _, h := range data[i+1 : i+5] {
				if !isHex(h) {
					return -1
				}
			}
			i += 4
		default:
			return -1
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber checks the number at data[i] and returns the offset just past
// it, or -1.
func scanNumber(data []byte, i int) int {
	digits := func(i int) int { // one or more
		j := i
		for j < len(data) && '0' <= data[j] && data[j] <= '9' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}

// unquote decodes the valid JSON string v, found at offset off of src. A
// string without escapes that is valid UTF-8, which is nearly every string,
// is a substring of src and costs nothing; anything else is left to
// encoding/json. plain says that the whole of src is such text, so that
// no string needs looking at.
func unquote(src string, v []byte, off int, plain bool) string {
	if plain || bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return src[off+1 : off+len(v)-1]
	}
	var s string
	// v is a valid JSON string, so this cannot fail.
	_ = json.Unmarshal(v, &s)
	return s
}
