package prd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// This file checks and walks JSON text, keeping every value's raw bytes and
// offset: the bytes let Marshal re-emit what it does not own unchanged, the
// offsets let errors point at a line and column.
//
// It is written for speed, because the loop reads and writes prd.json in
// every iteration and a file may hold thousands of stories: the decoder
// checks the syntax as it goes (open, key, after, skip), so that the text
// is walked once. The walk of text known to be valid (text, below) serves
// what Marshal and Save decode of their own output.

// field is one member of a JSON object, kept as written.
type field struct {
	key    string // decoded
	rawKey []byte // as written, quotes included
	value  []byte // as written
	off    int    // offset of value in the parsed data; meaningless after Marshal
}

// fieldsOf returns the members of the valid JSON object v.
func fieldsOf(v []byte) []field {
	t := newText(v)
	return t.fields(0, nil)
}

// newText returns the valid JSON text data, to walk.
func newText(data []byte) text {
	return text{data: data, src: string(data), plain: isPlain(data)}
}

// isPlain reports whether data has no backslash and is valid UTF-8.
func isPlain(data []byte) bool {
	return bytes.IndexByte(data, '\\') < 0 && utf8.Valid(data)
}

// text is JSON text being decoded.
type text struct {
	data []byte
	src  string // data as a string, for unquote
	// plain: the text has no escapes and is valid UTF-8, so its strings
	// decode to themselves.
	plain bool
}

// fields appends the members of the object that starts at data[off] to fs.
// The text must be valid JSON.
func (t *text) fields(off int, fs []field) []field {
	data := t.data
	i := skipSpace(data, off+1) // past '{'
	for data[i] != '}' {
		keyEnd := stringEnd(data, i)
		v := skipSpace(data, skipSpace(data, keyEnd)+1) // past ':'
		end := valueEnd(data, v)
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

// elements returns the text of each element of the valid JSON array raw.
func elements(raw []byte) [][]byte {
	var es [][]byte
	for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		end := valueEnd(raw, i)
		es = append(es, raw[i:end])
		if i = skipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return es
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

// maxScanDepth is the deepest nesting the decoder checks itself; deeper
// text is left to encoding/json, whose limit is higher.
const maxScanDepth = 256

// The decoder checks the syntax of what it decodes as it goes: whatever it
// accepts, encoding/json accepts too. It may turn down valid text it does
// not bother with (nesting deeper than maxScanDepth, unless d.deep), so a
// caller asks encoding/json before calling text bad. Each method below
// returns -1 where the text is bad; they also note in d.canonical whether
// the text is laid out as Marshal writes it (json.Indent's layout with a
// 2-space indent), so that Marshal may copy its values as they are. A
// value's depth is the number of objects and arrays around it.

// open checks the start of the object or array at data[i], at depth depth,
// and returns the offset of its first value (for an object, of its first
// key) and true, or the offset just past it and false when it is empty.
func (d *decoder) open(i, depth int) (int, bool) {
	if depth >= maxScanDepth && !d.deep {
		return -1, false
	}
	data := d.data
	closer := data[i] + 2 // '}' or ']'
	if i+1 < len(data) && data[i+1] == closer {
		return i + 2, false
	}
	j := d.space(i+1, depth+1)
	switch {
	case j >= len(data):
		return -1, false
	case data[j] == closer:
		// json.Indent writes an empty one as {} or [].
		d.canonical = false
		return j + 1, false
	}
	return j, true
}

// after checks what follows a value that ends at data[end] in the object or
// array at depth depth, whose closing bracket is closer: it returns the
// offset of the next value (for an object, of the next key) and true, or
// the offset just past the container and false when it ends there.
func (d *decoder) after(end, depth int, closer byte) (int, bool) {
	data := d.data
	j := end
	if j >= len(data) || data[j] != ',' {
		if j = d.space(end, depth); j >= len(data) {
			return -1, false
		}
		if data[j] == closer {
			return j + 1, false
		}
		if data[j] != ',' {
			return -1, false
		}
		d.canonical = false // space before the comma
	}
	k := d.space(j+1, depth+1)
	if k >= len(data) || data[k] == closer {
		return -1, false
	}
	return k, true
}

// space returns the offset of the first byte at or after data[i] that is
// not white space. It clears d.canonical unless the white space is the line
// break and indent that json.Indent puts before a line at depth depth,
// which it looks for first: in most files, that is what there is.
func (d *decoder) space(i, depth int) int {
	data := d.data
	if n := 2 * depth; i+n+1 < len(data) && data[i] == '\n' && spaces(data, i+1, n) && !isSpace(data[i+n+1]) {
		return i + n + 1
	}
	j := skipSpace(data, i)
	d.canonical = d.canonical && isIndent(data[i:j], depth)
	return j
}

// spaces reports whether the n bytes at data[i] are spaces, looking at
// eight bytes at a time. A byte must follow them.
func spaces(data []byte, i, n int) bool {
	for ; n >= 8; i, n = i+8, n-8 {
		if binary.LittleEndian.Uint64(data[i:]) != ones*' ' {
			return false
		}
	}
	if n > 0 && i+8 <= len(data) {
		low := uint64(1)<<(8*n) - 1 // the first n bytes
		return binary.LittleEndian.Uint64(data[i:])&low == ones*' '&low
	}
	for ; n > 0; i, n = i+1, n-1 {
		if data[i] != ' ' {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// key checks an object's key at data[i] and the colon after it, and
// returns the key, the offset just past it and the offset of its value.
func (d *decoder) key(i int) (name string, end, v int) {
	data := d.data
	if data[i] != '"' {
		return "", -1, -1
	}
	if name, end = d.str(i); end < 0 {
		return "", -1, -1
	}
	j := skipSpace(data, end)
	if j >= len(data) || data[j] != ':' {
		return "", -1, -1
	}
	v = skipSpace(data, j+1)
	d.canonical = d.canonical && j == end && v == j+2 && data[j+1] == ' '
	if v >= len(data) {
		return "", -1, -1
	}
	return name, end, v
}

// str checks the string at data[i] and returns its value and the offset
// just past it.
func (d *decoder) str(i int) (string, int) {
	end, plain := scanString(d.data, i)
	switch {
	case end < 0:
		return "", -1
	case plain:
		return d.src[i+1 : end-1], end
	}
	return unquote(d.src, d.data[i:end], i, false), end
}

// skip checks the value at data[i], at depth depth, and returns the offset
// just past it.
func (d *decoder) skip(i, depth int) int {
	data := d.data
	switch data[i] {
	case '{':
		j, more := d.open(i, depth)
		for more {
			var v int
			if _, _, v = d.key(j); v < 0 {
				return -1
			}
			if j = d.skip(v, depth+1); j < 0 {
				return -1
			}
			j, more = d.after(j, depth, '}')
		}
		return j
	case '[':
		j, more := d.open(i, depth)
		for more {
			if j = d.skip(j, depth+1); j < 0 {
				return -1
			}
			j, more = d.after(j, depth, ']')
		}
		return j
	case '"':
		end, _ := scanString(data, i)
		return end
	case 't':
		return literal(data, i, "true")
	case 'f':
		return literal(data, i, "false")
	case 'n':
		return literal(data, i, "null")
	}
	return scanNumber(data, i)
}

// literal returns the offset just past lit if data[i:] starts with it.
func literal(data []byte, i int, lit string) int {
	if !bytes.HasPrefix(data[i:], []byte(lit)) {
		return -1
	}
	return i + len(lit)
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

// For reading eight bytes at a time.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns the offset of the first quote, backslash or control
// character at or after data[i], the bytes a string scan stops at, or
// len(data), and the bytes before it ORed together. It looks at eight bytes
// at a time: in each, a byte that is one of them sets the high bit of its
// byte in the mask, and so may a byte after it, but no byte before it, so
// the lowest bit set is the first.
func special(data []byte, i int) (int, uint64) {
	var passed uint64
	for ; i+8 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64(data[i:])
		q := x ^ (ones * '"')
		b := x ^ (ones * '\\')
		if m := ((q-ones)&^q | (b-ones)&^b | (x-ones*0x20)&^x) & highs; m != 0 {
			n := bits.TrailingZeros64(m) / 8
			return i + n, passed | x&(uint64(1)<<(8*n)-1)
		}
		passed |= x
	}
	for ; i < len(data); i++ {
		c := data[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		passed |= uint64(c)
	}
	return i, passed
}

// scanString checks the string at data[i] and returns the offset just past
// it, or -1. As for encoding/json, invalid UTF-8 is no error (decoding
// replaces it); a control character is. plain reports whether the string
// has no escape and is ASCII, so that its value is its text.
func scanString(data []byte, i int) (end int, plain bool) {
	// Most strings have no escape: the first byte the scan stops at ends
	// them.
	j, passed := special(data, i+1)
	if j < len(data) && data[j] == '"' {
		return j + 1, passed&highs == 0
	}
	return scanEscaped(data, j), false
}

// scanEscaped is scanString from data[i], where a string's scan stopped
// at something other than its end: an escape, or a bad byte.
func scanEscaped(data []byte, i int) int {
	for ; ; i++ {
		if i, _ = special(data, i); i >= len(data) {
			return -1
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// A backslash: an escape.
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
