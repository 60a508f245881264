package prd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Marshal encodes f as prd.json: keys in their original order, members this
// package does not know as they were, and each known field from f and its
// stories. A field that did not change keeps its original text, so a file in
// the canonical form (2-space indent, as json.MarshalIndent writes it) comes
// back byte for byte. Keys a story lacked are added at the end of it, only when
// their value is not zero. The output is indented with 2 spaces and ends with
// a newline.
func (f *File) Marshal() ([]byte, error) {
	var compact bytes.Buffer
	writeObject(&compact, f, f.orig, f.fields, fileKeys)
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		// Every piece was valid JSON: this is a bug, not bad input.
		return nil, fmt.Errorf("marshal: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// storiesJSON encodes stories as a compact JSON array.
func storiesJSON(stories []*Story) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range stories {
		if i > 0 {
			b.WriteByte(',')
		}
		writeObject(&b, s, s.orig, s.fields, storyKeys)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// writeObject writes t as a compact JSON object with the members fs it was
// parsed from, known keys taken from t where they differ from orig (all of
// them if orig is nil), then the known keys fs lacks.
func writeObject[T any](b *bytes.Buffer, t, orig *T, fs []field, keys []key[T]) {
	n := 0
	member := func(k, v []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('{')
	seen := make(map[string]bool)
	for _, f := range fs {
		k := lookup(keys, f.key)
		if k == nil {
			member(f.rawKey, f.value)
			continue
		}
		seen[f.key] = true
		v, _ := k.get(t)
		if orig != nil {
			if was, _ := k.get(orig); same(v, was) {
				member(f.rawKey, f.value)
				continue
			}
		}
		if v != nil {
			member(f.rawKey, encode(v))
		}
	}
	for _, k := range keys {
		if v, add := k.get(t); add && !seen[k.name] {
			member(encode(k.name), encode(v))
		}
	}
	b.WriteByte('}')
}

// same reports whether two values returned by a key's get are equal.
func same(a, b any) bool {
	switch a := a.(type) {
	case []string:
		b, ok := b.([]string)
		return ok && slices.Equal(a, b)
	case []Answer:
		b, ok := b.([]Answer)
		return ok && slices.Equal(a, b)
	case json.RawMessage:
		return false // always rewritten from its parts
	}
	return a == b
}

// encode encodes a value returned by a key's get. Unlike json.Marshal it leaves
// <, > and & alone: prd.json is read by people, not by browsers.
func encode(v any) []byte {
	switch v := v.(type) {
	case json.RawMessage:
		return v
	case []string:
		if v == nil {
			v = []string{}
		}
		return encodeValue(v)
	case []Answer:
		if v == nil {
			v = []Answer{}
		}
		return encodeValue(v)
	}
	return encodeValue(v)
}

func encodeValue(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Strings, string slices, ints and bools always encode.
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
